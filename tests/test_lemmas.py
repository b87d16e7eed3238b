"""Property tests of the G²RPO lemmas (App. A.3, B, D): each test names its lemma."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close
from hypothesis import given
from hypothesis import strategies as st
from strategies import SMALL_SHAPES, block_states, bonus_vectors, etas, simplex_points

import simplexlab as sl
from simplexlab import theory as G
from simplexlab.theory import collision_field, concentration, neutralizer, reciprocal_bonus

NS = st.sampled_from([1, 2, 3, 5, 8])
grpo_drift = jax.jit(G.grpo_drift, static_argnames=("advantages",))


def V(u):
    return u * u - np.sum(u * u) * u


def is_uniform_on_support(x, tol=1e-12):
    s = x[x > 0]
    return np.max(s) - np.min(s) <= tol


def rk4(x, h, n_steps, f=V):
    """Fixed-step RK4 in NumPy; returns the trajectory (n_steps + 1, n)."""
    out = [x]
    for _ in range(n_steps):
        k1 = f(x)
        k2 = f(x + h / 2 * k1)
        k3 = f(x + h / 2 * k2)
        k4 = f(x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(x)
    return np.array(out)


# --------------------------------------------------------------------------- App. B


@given(P=NS.flatmap(simplex_points), data=st.data(), c=st.floats(-50, 50), eta=etas())
def test_lemma_b1_shift_invariance(P, data, c, eta):
    """Lemma B.1: J(P)²(B + c1) = J(P)²B — a global constant bonus is invisible to GRPO."""
    A = data.draw(bonus_vectors(len(P)))
    B = data.draw(bonus_vectors(len(P)))
    assert_close(G.probability_drift(P, A, B + c, eta), G.probability_drift(P, A, B, eta),
                 atol=1e-12 * (1 + abs(c)), rtol=0)
    assert_close(G.logit_drift(P, B + c, eta), G.logit_drift(P, B, eta),
                 atol=1e-12 * (1 + abs(c)), rtol=0)


@given(x=NS.flatmap(lambda n: simplex_points(n, min_entry=1e-6)), a=st.floats(-5, 5))
def test_lemma_b6_centered_reciprocal_bonus(x, a):
    """Lemma B.6: B_i = a(1/(n x_i) − 1) (eq. 40) is x-centered and C_x(B) = −a V(x) (eq. 38)."""
    B = np.asarray(reciprocal_bonus(x, a))
    scale = 1 + np.max(np.abs(B)) * np.max(x)
    assert abs(np.sum(x * B)) <= 1e-12 * scale
    assert_close(G.collision_operator(x, B), -a * V(x), atol=1e-12 * scale, rtol=0)
    # and C_x(1) = V(x): a block-uniform bonus only rescales V (eq. 39)
    assert_close(G.collision_operator(x, np.ones_like(x)), V(x), atol=1e-15, rtol=0)


NON_RECIPROCAL = {
    "s": lambda s: s,
    "s^2": lambda s: s**2,
    "log s": jnp.log,
    "1/s^2": lambda s: 1.0 / s**2,
    "1/sqrt(s)": lambda s: 1.0 / jnp.sqrt(s),
    "exp(s)": jnp.exp,
    "1/(s + 0.1)": lambda s: 1.0 / (s + 0.1),
    "1/s + s": lambda s: 1.0 / s + s,
}


@pytest.mark.parametrize("name", list(NON_RECIPROCAL))
@pytest.mark.parametrize("n", [3, 4, 7])
def test_theorem_b8_witness_for_non_reciprocal_bonus(name, n):
    """Theorem B.8 (essential uniqueness): for f not of the form c/s + d, a seeded search finds a
    point x ∈ Δ^{n−1} where C_x(f(x)) is not collinear with V(x)."""
    x, defect = G.noncollinearity_witness(NON_RECIPROCAL[name], n, seed=0)
    assert defect > 1e-3, (name, n, defect)
    assert_close(np.sum(x), 1.0, atol=1e-14)
    # independent check of the witness: C and V span a 2-d space (rank 2 numerically)
    C = np.asarray(G.collision_operator(x, np.asarray(NON_RECIPROCAL[name](jnp.asarray(x)))))
    sv = np.linalg.svd(np.stack([C / np.linalg.norm(C), V(x) / np.linalg.norm(V(x))]),
                       compute_uv=False)
    assert sv[-1] > 1e-4


@given(x=st.sampled_from([3, 4, 6]).flatmap(lambda n: simplex_points(n, min_entry=1e-4)),
       c=st.floats(-5, 5), d=st.floats(0.1, 5).flatmap(lambda v: st.sampled_from([v, -v])))
def test_theorem_b8_reciprocal_family_is_always_collinear(x, c, d):
    """Theorem B.8 converse: f(s) = c/s + d gives C_x(B) = d V(x) at every simplex point."""
    if np.linalg.norm(V(x)) < 1e-6:  # (near-)uniform on support: V = 0, nothing to align with
        return
    B = c / x + d
    assert float(G.alignment_defect(x, B)) <= 1e-9
    assert_close(G.collision_operator(x, B), d * V(x), atol=1e-12 * (1 + abs(c)), rtol=0)


def test_theorem_b8_pure_reciprocal_has_zero_drift_and_zero_defect():
    """f(s) = c/s: x ⊙ (x ⊙ c/x) = c x and ⟨x, c 1⟩ = c, so C_x(B) = 0 = 0 · V(x) (α = 0), a
    rescaling; in floats C is round-off, which the defect reads as 0 (not as a direction), while
    a small genuine non-collinear part (c/s + 1e-6 s², whose g(s) = s f(s) is not affine) is
    still seen."""
    rng = np.random.default_rng(5)
    for n in (2, 3, 6):
        x = rng.dirichlet(np.ones(n), 50)
        for c in (1.0, -3.0, 40.0):
            C = np.asarray(G.collision_operator(x, c / x))
            assert np.max(np.abs(C)) <= 1e-12 * abs(c)
            assert float(np.max(G.alignment_defect(x, c / x))) == 0.0
        if n >= 3:
            assert float(np.max(G.alignment_defect(x, 1.0 / x + 1e-6 * x**2))) > 1e-3


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True), data=st.data(), eta=etas())
def test_prop_d2_neutrality(s, data, eta):
    """Prop. D.2 / eq. (53): with B_b = neutralizer(B_g) on every bad arm, E[Δp]_bonus = 0 in
    the generic drift — and the full GRPO ṗ equals the baseline (19)."""
    p, y, z = s
    st_ = sl.make_state(p, y, z)
    Bg = data.draw(bonus_vectors(len(y)))
    Bb = float(neutralizer(p, y, z, Bg))
    B = np.concatenate([Bg, np.full(len(z), Bb)])
    scale = 1 + np.max(np.abs(B))
    assert abs(float(grpo_drift(st_, B, eta=eta, advantages=False).p)) <= 1e-12 * scale
    full, base = grpo_drift(st_, B, eta=eta), grpo_drift(st_, None, eta=eta)
    assert_close(full.p, base.p, atol=1e-12 * (scale + 1 / np.sqrt(p * (1 - p))), rtol=0)


@given(s=block_states(shapes=SMALL_SHAPES), data=st.data(), eta=etas())
def test_remark_b5_neutrality_conditions(s, data, eta):
    """Remark B.5: a y-centered good bonus is neutral in p iff it is also y²-centered; a
    z-centered bad bonus iff Σ z² C = 0 (eqs. 34, 37)."""
    p, y, z = s
    st_ = sl.make_state(p, y, z)
    for block, x in (("good", y), ("bad", z)):
        u = data.draw(bonus_vectors(len(x)))
        c1 = u - np.sum(x * u)  # x-centered only
        # x- and x²-centered: remove the components along 1 and x (projected), Gram–Schmidt
        basis = np.linalg.qr(np.stack([x, x * x], axis=1))[0]
        c2 = u - basis @ (basis.T @ u)
        for c, neutral in ((c1, False), (c2, True)):
            B = np.concatenate([c, np.zeros(len(z))] if block == "good" else [np.zeros(len(y)), c])
            dp = float(grpo_drift(st_, B, eta=eta, advantages=False).p)
            S = float(np.sum(x * x * c))
            if neutral or len(x) == 1:
                assert abs(dp) <= 1e-12 * (1 + np.max(np.abs(c)))
            else:  # the leak is exactly (34) / (37)
                want = -eta * p * (1 - p) ** 2 * S if block == "good" else \
                    eta * p**2 * (1 - p) * S
                assert_close(dp, want, atol=1e-12 * (1 + np.max(np.abs(c))), rtol=0)


# --------------------------------------------------------------------------- App. A.3


def phi(y):
    return jnp.sum(y**3) / 3.0 - jnp.sum(y**2) ** 2 / 4.0


grad_phi = jax.jit(jax.grad(phi))


@given(y=NS.flatmap(simplex_points))
def test_lemma_a3_gradient_structure_and_face_tangency(y):
    """Lemma A.3: V = ∇Φ with Φ = S3/3 − L²/4 (autodiff), so dΦ/dτ = ||V||² ≥ 0; the field
    conserves Σy and vanishes on coordinates that are 0 (tangent to every face)."""
    assert_close(grad_phi(jnp.asarray(y)), V(y), atol=1e-15, rtol=0)
    assert abs(np.sum(V(y))) <= 1e-15
    y0 = y.copy()
    y0[np.argmin(y0)] = 0.0
    assert np.asarray(collision_field(y0))[np.argmin(y)] == 0.0


@given(y=NS.flatmap(lambda n: simplex_points(n, near_faces=False)))
def test_lemma_a3_simplex_invariance_and_lyapunov_along_trajectories(y):
    """Lemma A.3 along RK4 trajectories of (28): Σy = 1, y ≥ 0, and Φ(y(τ)) nondecreasing;
    Lemma A.4: L_y(τ) nondecreasing too."""
    traj = rk4(y, 0.05, 200)
    assert np.max(np.abs(traj.sum(-1) - 1.0)) <= 1e-12
    assert np.all(traj >= 0)
    ph = np.array([float(phi(jnp.asarray(t))) for t in traj[::10]])
    L = np.sum(traj**2, -1)
    assert np.all(np.diff(ph) >= -1e-15)
    assert np.all(np.diff(L) >= -1e-15)


@given(y=NS.flatmap(simplex_points))
def test_lemma_a4_monotone_concentration(y):
    """Lemma A.4, eq. (4): dL/dτ = 2(S3 − L²) = 2Σ y_j (y_j − L)² ≥ 0 (the first via jax.jvp),
    with equality iff y is uniform on its support."""
    _, dL = jax.jvp(concentration, (jnp.asarray(y),), (jnp.asarray(V(y)),))
    L = np.sum(y * y)
    var = 2 * np.sum(y * (y - L) ** 2)
    assert_close(dL, 2 * (np.sum(y**3) - L**2), atol=1e-15, rtol=0)
    assert_close(dL, var, atol=1e-15, rtol=0)
    assert var >= 0
    if is_uniform_on_support(y, tol=0.0):
        assert var <= 1e-15
    else:
        assert var > 0


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_lemma_a4_equality_on_uniform_on_support_points(n):
    """Lemma A.4: dL/dτ = 0 at every E_m point (and Prop. A.5: V = 0 there)."""
    for fp in G.uniform_on_support(n):
        y = fp.point
        L = np.sum(y * y)
        assert 2 * np.sum(y * (y - L) ** 2) <= 1e-16
        assert np.max(np.abs(V(y))) <= 1e-16


@given(y=NS.flatmap(simplex_points), i=st.integers(0, 7), j=st.integers(0, 7))
def test_lemma_a6_order_preservation(y, i, j):
    """Lemma A.6: δ_ij' = δ_ij (y_i + y_j − L) and sign δ_ij(τ) = sign δ_ij(0) along (28)."""
    n = len(y)
    i, j = i % n, j % n
    L = np.sum(y * y)
    assert_close(V(y)[i] - V(y)[j], (y[i] - y[j]) * (y[i] + y[j] - L), atol=1e-15, rtol=0)
    traj = rk4(y, 0.05, 100)
    d0 = y[i] - y[j]
    d = traj[:, i] - traj[:, j]
    if d0 == 0:
        assert np.all(np.abs(d) <= 1e-15)
    else:
        assert np.all(np.sign(d) == np.sign(d0))
    # the maximiser is preserved
    assert np.argmax(traj[-1]) == np.argmax(y) or np.isclose(traj[-1].max(), traj[-1][np.argmax(y)])


@given(y=NS.flatmap(simplex_points))
def test_prop_a5_equilibria_are_uniform_on_support(y):
    """Prop. A.5: V(y) = 0 iff y_j ∈ {0, L_y} for all j, i.e. y is uniform on its support."""
    L = np.sum(y * y)
    nonzero = y > 0
    on_E = np.all(np.abs(y[nonzero] - L) <= 1e-12)
    assert on_E == is_uniform_on_support(y, tol=1e-12)
    if on_E:
        assert np.max(np.abs(V(y))) <= 1e-13
    else:
        # |V_j| = y_j |y_j − L| > 0 for a coordinate off the level L
        assert np.max(np.abs(V(y))) > 0
