"""Fixed points and stability of the baseline and edited within-block fields (G²RPO Prop. A.5,
Theorem A.7, eqs. 57, 61, 63, 68) and the flip threshold (61) vs the sign of (57)."""

import itertools

import jax
import numpy as np
import pytest
from helpers import assert_close

import simplexlab as sl
from simplexlab import theory as G
from simplexlab.theory import collision_field, flip_threshold, inner_gain


def anti_collision(x):
    return -collision_field(x)


def expected_kind(m, K, sign):
    if K == 1:
        return "non-hyperbolic"
    if m == 1:
        return "sink" if sign > 0 else "source"
    if m == K:
        return "source" if sign > 0 else "sink"
    return "saddle"


@pytest.mark.parametrize("sign", [1, -1], ids=["collision", "anti-collision"])
@pytest.mark.parametrize("K", [1, 2, 3, 4, 5])
def test_theorem_a7_finder_recovers_all_E_m_with_labels(K, sign):
    """Prop. A.5 + Theorem A.7: the root finder (not seeded with E only — it also runs
    Gauss–Newton from random points of every face) returns exactly the 2^K − 1 uniform-on-support
    points; for V the vertices are sinks, the barycentre a source, the rest saddles (eigenvalues
    +1/m within the support, −1/m transverse); reversed for −V."""
    f = collision_field if sign > 0 else anti_collision
    fps = G.find_fixed_points(f, K)
    want = {s for m in range(1, K + 1) for s in itertools.combinations(range(K), m)}
    assert {fp.support for fp in fps} == want and len(fps) == len(want)
    for fp in fps:
        m = len(fp.support)
        assert_close(fp.point[list(fp.support)], 1.0 / m, atol=1e-12)
        assert fp.kind == expected_kind(m, K, sign), (fp.support, fp.eigenvalues)
        eig = np.sort(fp.eigenvalues.real)
        want_eig = np.sort(sign * np.array([1.0 / m] * (m - 1) + [-1.0 / m] * (K - m)))
        assert_close(eig, want_eig, atol=1e-10)


def test_uniform_on_support_and_classify_keep_their_signatures():
    fps = G.uniform_on_support(3)
    assert len(fps) == 7 and [fp.kind for fp in fps[:3]] == ["sink"] * 3
    assert fps[-1].kind == "source"
    eig, kind = G.classify(anti_collision, np.ones(3) / 3)
    assert kind == "sink" and eig.shape == (2,)


def test_finder_on_schedule_a_neutralized_field_finds_level_set_of_61():
    """Schedule A, eq. (63): y' = [1 − λ0 ρ(y, z)] V(y) with z frozen. Besides E_m, the zeros are
    the points where λ0 = λ̃_flip(L_y, L_z) (eq. 61) — a level set of L_y, non-isolated, hence
    non-hyperbolic; E_m labels follow the sign of 1 − λ0 ρ at L_y = 1/m."""
    K, lam0 = 3, 1.5
    s = sl.make_state(0.3, np.ones(K) / K, np.array([0.7, 0.2, 0.1]))
    f = G.block_field(sl.Neutralized(sl.ScheduleA(lam0)), s)
    fps = G.find_fixed_points(f, K)
    Lz = float(s.L_z)
    on_E = [bool(np.ptp(fp.point[list(fp.support)]) < 1e-9) for fp in fps]
    E = [fp for fp, e in zip(fps, on_E, strict=True) if e]
    others = [fp for fp, e in zip(fps, on_E, strict=True) if not e]
    assert len(E) == 7 and len(others) >= 3
    for fp in others:
        Ly = float(np.sum(fp.point**2))
        assert_close(flip_threshold(Ly, Lz, K), lam0, rtol=1e-9)
        assert fp.kind == "non-hyperbolic"
    for fp in E:
        m = len(fp.support)
        coef = 1 - lam0 * (Lz + 1 / K) / (1 / m + Lz)
        # within-support eigenvalue coef/m, transverse −coef/m (the level set is away from E)
        if m == K:
            assert fp.kind == ("source" if coef > 0 else "sink")
        elif m == 1:
            assert fp.kind == ("sink" if coef > 0 else "source")


def test_block_field_batches():
    s = sl.make_state(0.4, np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4]))
    f = G.block_field(sl.GRPO(), s)
    ys = np.random.default_rng(0).dirichlet(np.ones(3), size=(4, 5))
    assert_close(f(ys), collision_field(ys), atol=1e-15)
    g = G.block_field(sl.GRPO(), s, "z")
    assert_close(g(np.array([0.7, 0.3])), -collision_field(np.array([0.7, 0.3])), atol=1e-15)
    with pytest.raises(ValueError, match="block"):
        G.block_field(sl.GRPO(), s, "x")
    with pytest.raises(ValueError, match="n \\(simplex"):
        G.find_fixed_points(collision_field, 0)


def _with_concentration(L, n, base=None):
    """A point of Δ^{n−1} with ||x||² = L: x = (1−t) u + t e_1 (u uniform)."""
    u = np.ones(n) / n
    t = np.sqrt(max(L - 1 / n, 0.0) / (1 - 1 / n))
    x = (1 - t) * u
    x[0] += t
    return x


def test_flip_threshold_61_reproduces_sign_change_of_57():
    """(60)–(61): on a grid of (L_y, L_z), the inner-time y-coefficient of the neutralized
    field (57) — read off the generic J(P)²(A + B) drift divided by κ — is positive for
    λ̃ < λ̃_flip and negative for λ̃ > λ̃_flip, and vanishes at λ̃ = λ̃_flip."""
    K, M, p = 4, 6, 0.35
    ver = sl.Verifier(0.1, 0.05)
    gen = jax.jit(G.grpo_drift)
    n_checked = 0
    for Ly in np.linspace(1 / K + 0.02, 0.95, 7):  # L_y < 1: B* = λ/(K y_j) needs y > 0
        for Lz in np.linspace(1 / M, 1.0, 7):
            y, z = _with_concentration(Ly, K), _with_concentration(Lz, M)
            s = sl.make_state(p, y, z)
            thr = float(flip_threshold(s.L_y, s.L_z, K))
            V = np.asarray(collision_field(y))
            coefs = []
            for lt_target in (0.5 * thr, 0.95 * thr, thr, 1.05 * thr, 2.0 * thr):
                lam = lt_target / float(inner_gain(p, 1.0, ver))  # λ with λ̃ = lt_target (59)
                Bg = np.asarray(sl.theory.reciprocal_bonus(y, lam))
                Bb = float(sl.theory.neutralizer_reciprocal(p, s.L_y, s.L_z, K, lam))
                d = gen(s, np.concatenate([Bg, np.full(M, Bb)]), verifier=ver)
                kap = float(sl.theory.kappa(p, 1.0, ver))
                coefs.append(float(np.asarray(d.y) @ V / (V @ V)) / kap)
            c = np.array(coefs)
            assert c[0] > 0 and c[1] > 0 and c[3] < 0 and c[4] < 0, (Ly, Lz, c)
            assert abs(c[2]) <= 1e-10
            n_checked += 1
    assert n_checked == 49
