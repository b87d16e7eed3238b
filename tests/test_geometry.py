"""Generic bonus-to-drift machinery vs the closed forms of G²RPO App. A.2, B, C, D.

The reference is the generic drift ``η J(P)² (A + B)`` (eq. 31) pushed to (p, y, z) by eq. (15);
every closed form must equal it to ≤ 1e-12 (scaled by the size of the advantage/bonus) in x64.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    SMALL_SHAPES,
    block_states,
    bonus_vectors,
    etas,
    gains,
    simplex_points,
    verifier_noise,
)

import simplexlab as sl
from simplexlab import theory as G
from simplexlab.theory import (
    attenuation,
    collision_field,
    flip_threshold,
    gain_schedule_a,
    gain_schedule_b,
    global_flip_gain,
    inner_gain,
    kappa,
    neutralizer,
    neutralizer_reciprocal,
    neutralizer_schedule_a,
    neutralizer_schedule_b,
    reciprocal_bonus,
)

EPS = 1e-12
# one compile per (function, shape): reused across hypothesis examples
grpo_drift = jax.jit(G.grpo_drift, static_argnames=("advantages",))
def field(dyn, s):
    return dyn.vector_field(0.0, s)


def close_state(got, want, scale=1.0, msg=""):
    for name in ("p", "y", "z"):
        assert_close(getattr(got, name), getattr(want, name), rtol=0, atol=EPS * scale,
                     err_msg=f"{msg} component {name}")


def center(u, x):
    """x-center a bonus: u − ⟨x, u⟩ (Def. B.2)."""
    return u - np.sum(x * u)


# --------------------------------------------------------------------------- generic machinery


@given(P=st.sampled_from([1, 3, 6]).flatmap(simplex_points), data=st.data(), eta=etas())
def test_generic_drifts_equal_explicit_matrices(P, data, eta):
    """J(P) = Diag(P) − PPᵀ; E[Δθ] = ηJA; E[ΔP] = ηJ²(A+B) (eq. 31), vs NumPy matrix algebra."""
    n = len(P)
    A = data.draw(bonus_vectors(n))
    B = data.draw(bonus_vectors(n))
    Jm = np.diag(P) - np.outer(P, P)
    assert_close(G.softmax_jacobian(P), Jm, atol=1e-15)
    assert_close(G.logit_drift(P, A, eta), eta * Jm @ A, atol=1e-13)
    assert_close(G.probability_drift(P, A, B, eta), eta * Jm @ Jm @ (A + B), atol=1e-13)
    assert_close(G.probability_drift(P, A, eta=eta), eta * Jm @ Jm @ A, atol=1e-13)


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True), data=st.data())
def test_push_forward_is_the_derivative_of_the_block_map(s, data):
    """Eq. (15) is the directional derivative of P ↦ (p, y, z) (checked by autodiff, jax.jvp)."""
    p, y, z = s
    K = len(y)
    st_ = sl.make_state(p, y, z)
    P = np.asarray(st_.policy())
    dP = data.draw(bonus_vectors(len(P)))

    def blocks(P):
        pb = jnp.sum(P[K:])
        return pb, P[:K] / (1.0 - pb), P[K:] / pb

    _, (dp, dy, dz) = jax.jvp(blocks, (jnp.asarray(P),), (jnp.asarray(dP),))
    got = G.push_forward(st_, dP)
    # the reference re-sums p = Σ P_bad (an ulp off p, magnified by 1/(1 − p) or 1/p) and Δy, Δz
    # carry |ΔP|/(1 − p), |ΔP|/p: the error scales with both
    scale = (1.0 + np.max(np.abs(dP))) / (p * (1 - p))
    assert_close(got.p, dp, atol=1e-13 * scale, rtol=0)
    assert_close(got.y, dy, atol=1e-13 * scale, rtol=0)
    assert_close(got.z, dz, atol=1e-13 * scale, rtol=0)


def test_generic_machinery_batches_jits_and_vmaps(rng):
    K, M = 3, 2
    ps = rng.uniform(0.1, 0.9, 5)
    ys, zs = rng.dirichlet(np.ones(K), 5), rng.dirichlet(np.ones(M), 5)
    B = rng.normal(size=(5, K + M))
    batch = sl.make_state(ps, ys, zs)
    ver = sl.Verifier(0.1, 0.05)
    whole = G.grpo_drift(batch, B, eta=0.7, verifier=ver)
    jitted = jax.jit(lambda s, b: G.grpo_drift(s, b, eta=0.7, verifier=ver))(batch, B)
    vmapped = jax.vmap(lambda s, b: G.grpo_drift(s, b, eta=0.7, verifier=ver))(batch, B)
    for i in range(5):
        one = G.grpo_drift(sl.make_state(ps[i], ys[i], zs[i]), B[i], eta=0.7, verifier=ver)
        for got in (whole, jitted, vmapped):
            close_state(jax.tree.map(lambda a, i=i: a[i], got), one)
    assert G.softmax_jacobian(batch.policy()).shape == (5, K + M, K + M)
    assert G.collision_operator(ys, B[:, :K]).shape == (5, K)


# --------------------------------------------------------------------------- baseline (19)–(21)


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True),
       noise=verifier_noise(), eta=etas())
def test_baseline_drift_19_21_equals_generic(s, noise, eta):
    """(19)–(21)/(22): GRPO's field equals ηJ(P)²A with a_g = Jp/σ, a_b = −J(1−p)/σ, pushed by
    (15); and the block-uniform closed form (39) with (c_g, c_b) = (a_g, a_b) gives the same."""
    st_ = sl.make_state(*s)
    ver = sl.Verifier(*noise)
    gen = grpo_drift(st_, eta=eta, verifier=ver)
    scale = 1.0 + float(np.max(np.abs(G.baseline_advantages(st_, ver))))
    close_state(field(sl.GRPO(verifier=ver, eta=eta), st_), gen, scale, "GRPO")
    a_g, a_b = G.block_advantages(st_.p, ver)
    close_state(G.block_uniform_drift(st_, a_g, a_b, eta), gen, scale, "(39)")
    # (20): the y-rate is κ(p) = η J p(1−p)/σ (eq. 23)
    assert_close(gen.y, kappa(s[0], eta, ver) * collision_field(s[1]), atol=EPS * scale, rtol=0)


# --------------------------------------------------------------------------- App. B closed forms


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True), data=st.data(), eta=etas())
def test_lemma_b3_centered_good_bonus_33_34(s, data, eta):
    """Lemma B.3, eqs. (33)–(34): a y-centered good-only bonus moves y by η(1−p)C_y(B) (38) and
    leaks −ηp(1−p)²Σy²B into p; z does not move."""
    p, y, z = s
    st_ = sl.make_state(p, y, z)
    Bg = center(data.draw(bonus_vectors(len(y))), y)
    gen = grpo_drift(st_, np.concatenate([Bg, np.zeros(len(z))]), eta=eta, advantages=False)
    close_state(G.centered_good_bonus_drift(st_, Bg, eta), gen, 1 + np.max(np.abs(Bg)))


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True), data=st.data(), eta=etas())
def test_corollary_b4_centered_bad_bonus_36_37(s, data, eta):
    """Corollary B.4, eqs. (36)–(37): a z-centered bad-only bonus moves z by ηpC_z(C) and leaks
    +ηp²(1−p)Σz²C into p; y does not move."""
    p, y, z = s
    st_ = sl.make_state(p, y, z)
    C = center(data.draw(bonus_vectors(len(z))), z)
    gen = grpo_drift(st_, np.concatenate([np.zeros(len(y)), C]), eta=eta, advantages=False)
    close_state(G.centered_bad_bonus_drift(st_, C, eta), gen, 1 + np.max(np.abs(C)))


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True), cg=st.floats(-5, 5),
       cb=st.floats(-5, 5), eta=etas())
def test_block_uniform_39(s, cg, cb, eta):
    """Eq. (39): B = (c_g 1_K, c_b 1_M) only rescales V(y), V(z) and moves p."""
    p, y, z = s
    st_ = sl.make_state(p, y, z)
    B = np.concatenate([np.full(len(y), cg), np.full(len(z), cb)])
    gen = grpo_drift(st_, B, eta=eta, advantages=False)
    close_state(G.block_uniform_drift(st_, cg, cb, eta), gen, 6.0)


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True), data=st.data(),
       Bb=st.floats(-5, 5), eta=etas())
def test_lemma_d1_bad_mass_drift_52(s, data, Bb, eta):
    """Lemma D.1, eq. (52), for an arbitrary (uncentered) good bonus and a uniform bad bonus."""
    p, y, z = s
    st_ = sl.make_state(p, y, z)
    Bg = data.draw(bonus_vectors(len(y)))
    gen = grpo_drift(st_, np.concatenate([Bg, np.full(len(z), Bb)]), eta=eta, advantages=False)
    assert_close(G.bad_mass_drift(st_, Bg, Bb, eta), gen.p, atol=EPS * 6, rtol=0)


@given(s=block_states(shapes=SMALL_SHAPES), lam=gains(0.0, 4.0), eta=etas())
def test_prop_c1_reciprocal_bonus_45_46(s, lam, eta):
    """Prop. C.1, eqs. (45)–(46): B* gives Δy = −ηλ(1−p)V(y), Δp = ηλp(1−p)²(L_y − 1/K)."""
    p, y, z = s
    K = len(y)
    st_ = sl.make_state(p, y, z)
    Bg = np.asarray(reciprocal_bonus(y, lam))
    scale = 1 + np.max(np.abs(Bg))
    gen = grpo_drift(st_, np.concatenate([Bg, np.zeros(len(z))]), eta=eta, advantages=False)
    assert_close(gen.y, -eta * lam * (1 - p) * collision_field(y), atol=EPS * scale, rtol=0)
    assert_close(gen.p, eta * lam * p * (1 - p) ** 2 * (np.sum(y * y) - 1 / K),
                 atol=EPS * scale, rtol=0)
    close_state(G.centered_good_bonus_drift(st_, Bg, eta), gen, scale)


# --------------------------------------------------------------------------- App. D neutralizers


@given(s=block_states(shapes=SMALL_SHAPES, near_faces=True), data=st.data(), eta=etas())
def test_neutralizer_53_zeroes_the_bad_mass_drift(s, data, eta):
    """Prop. D.2, eq. (53) for an arbitrary good bonus (and (54) for a y-centered one):
    E[Δp]_bonus = 0 in the generic drift."""
    p, y, z = s
    st_ = sl.make_state(p, y, z)
    for Bg in (data.draw(bonus_vectors(len(y))), center(data.draw(bonus_vectors(len(y))), y)):
        Bb = float(neutralizer(p, y, z, Bg))
        scale = 1 + np.max(np.abs(Bg)) + abs(Bb)
        gen = grpo_drift(st_, np.concatenate([Bg, np.full(len(z), Bb)]), eta=eta,
                           advantages=False)
        assert_close(gen.p, 0.0, atol=EPS * scale)


@given(s=block_states(shapes=SMALL_SHAPES), lam=gains(0.0, 4.0), noise=verifier_noise(), eta=etas())
def test_reciprocal_neutralizers_55_65_70(s, lam, noise, eta):
    """(55) is (54) at B*; (65) and (70) are (55) at the schedule-A (62) and schedule-B (67)
    gains; each makes E[Δp]_bonus = 0 in the generic drift."""
    p, y, z = s
    K = len(y)
    ver = sl.Verifier(*noise)
    st_ = sl.make_state(p, y, z)
    Ly, Lz = st_.L_y, st_.L_z
    cases = [
        (lam, neutralizer_reciprocal(p, Ly, Lz, K, lam)),
        (gain_schedule_a(p, lam, ver), neutralizer_schedule_a(p, Ly, Lz, K, lam, ver)),
        (gain_schedule_b(p, Ly, Lz, K, lam, ver), neutralizer_schedule_b(p, Ly, Lz, K, lam, ver)),
    ]
    for g, Bb in cases:
        Bg = np.asarray(reciprocal_bonus(y, g))
        assert_close(Bb, neutralizer(p, y, z, Bg), rtol=1e-12, atol=1e-13)
        assert_close(Bb, neutralizer_reciprocal(p, Ly, Lz, K, g), rtol=1e-12, atol=1e-13)
        scale = 1 + np.max(np.abs(Bg)) + abs(float(Bb))
        gen = grpo_drift(st_, np.concatenate([Bg, np.full(len(z), float(Bb))]), eta=eta,
                           advantages=False)
        assert_close(gen.p, 0.0, atol=EPS * scale)


@given(s=block_states(shapes=SMALL_SHAPES), lam=gains(0.0, 4.0), noise=verifier_noise(), eta=etas(),
       schedule=st.sampled_from(["const", "A", "B"]))
def test_edited_fields_equal_generic_drift(s, lam, noise, eta, schedule):
    """(48) and (56) with constant λ, schedule A (62–65) and schedule B (67–70) equal
    ηJ(P)²(A + B) pushed by (15) — the library version of the meanfield cross-check."""
    p, y, z = s
    ver = sl.Verifier(*noise)
    gain = {"const": sl.ConstantGain, "A": sl.ScheduleA, "B": sl.ScheduleB}[schedule](lam)
    st_ = sl.make_state(p, y, z)
    g = float(gain(0.0, st_.p, st_.L_y, st_.L_z, st_.K, ver))
    Bg = np.asarray(reciprocal_bonus(y, g))
    Bb = float(neutralizer_reciprocal(p, st_.L_y, st_.L_z, st_.K, g))
    A = np.asarray(G.baseline_advantages(st_, ver))
    for dyn, B in [
        (sl.GoodBonus(gain, verifier=ver, eta=eta), np.concatenate([Bg, np.zeros(len(z))])),
        (sl.Neutralized(gain, verifier=ver, eta=eta), np.concatenate([Bg, np.full(len(z), Bb)])),
    ]:
        scale = 1 + np.max(np.abs(A + B))
        close_state(field(dyn, st_), grpo_drift(st_, B, eta=eta, verifier=ver),
                    scale, type(dyn).__name__)


@given(s=block_states(shapes=SMALL_SHAPES), lam=gains(0.0, 6.0), noise=verifier_noise(), eta=etas())
def test_attenuation_and_flip_threshold_57_61(s, lam, noise, eta):
    """(57)/(60)–(61): the inner-time y-coefficient of the generic neutralized drift is
    1 − λ̃ρ(y, z), with λ̃ from (59), ρ the attenuation, and λ̃_flip = 1/ρ."""
    p, y, z = s
    K = len(y)
    ver = sl.Verifier(*noise)
    st_ = sl.make_state(p, y, z)
    V = np.asarray(collision_field(y))
    vv = float(V @ V)
    if vv < 1e-10:  # y (numerically) uniform: V(y) = 0 carries no coefficient
        return
    Bg = np.asarray(reciprocal_bonus(y, lam))
    Bb = float(neutralizer_reciprocal(p, st_.L_y, st_.L_z, K, lam))
    gen = grpo_drift(st_, np.concatenate([Bg, np.full(len(z), Bb)]), eta=eta, verifier=ver)
    coef = float(np.asarray(gen.y) @ V) / vv / float(kappa(p, eta, ver))
    rho = float(attenuation(st_.L_y, st_.L_z, K))
    lt = float(inner_gain(p, lam, ver))
    scale = (1 + np.max(np.abs(Bg)) + abs(Bb)) / (vv ** 0.5 * float(kappa(p, eta, ver)))
    assert abs(coef - (1 - lt * rho)) <= 1e-11 * scale
    assert_close(rho * flip_threshold(st_.L_y, st_.L_z, K), 1.0, rtol=1e-14)
    assert 0 < rho <= 1 + 1e-12


@pytest.mark.parametrize("K,M", [(1, 1), (2, 1), (3, 4), (5, 2), (8, 8), (4, 20)])
def test_global_flip_gain_66_is_the_worst_case_threshold(K, M):
    """(66): K(M+1)/(K+M) = max of (61) over L_y ∈ [1/K, 1], L_z ∈ [1/M, 1] (at L_y=1, L_z=1/M)."""
    Ly, Lz = np.meshgrid(np.linspace(1 / K, 1, 201), np.linspace(1 / M, 1, 201))
    thr = np.asarray(flip_threshold(Ly, Lz, K))
    assert_close(np.max(thr), global_flip_gain(K, M), rtol=1e-14)
    assert_close(flip_threshold(1.0, 1.0 / M, K), global_flip_gain(K, M), rtol=1e-14)


# --------------------------------------------------------------------------- bad input


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="simplex"):
        G.softmax_jacobian(np.array([0.6, 0.6]))
    with pytest.raises(ValueError, match="non-negative"):
        G.probability_drift(np.array([1.2, -0.2]), np.zeros(2))
    with pytest.raises(ValueError, match="length >= 1"):
        G.softmax_jacobian(np.array([]))
    with pytest.raises(ValueError, match="same last-axis length"):
        G.logit_drift(np.array([0.5, 0.5]), np.zeros(3))
    with pytest.raises(ValueError, match="B \\(bonus\\)"):
        G.probability_drift(np.array([0.5, 0.5]), np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="same last-axis length"):
        G.collision_operator(np.array([0.5, 0.5]), np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        G.collision_operator(np.array([np.nan, 0.5]), np.zeros(2))
    s = sl.make_state(0.5, np.array([0.5, 0.5]), np.array([1.0]))
    with pytest.raises(ValueError, match="K \\+ M = 3"):
        G.push_forward(s, np.zeros(4))
    with pytest.raises(ValueError, match="bonus"):
        G.grpo_drift(s, np.zeros(2))
    with pytest.raises(ValueError, match="n >= 3"):
        G.noncollinearity_witness(lambda x: x, 2)


def test_off_simplex_raises_under_jit():
    f = jax.jit(lambda P: G.probability_drift(P, jnp.zeros(2)))
    with pytest.raises(Exception, match="simplex"):
        jax.block_until_ready(f(jnp.array([0.7, 0.7])))
