"""Mean-field (p, y, z) fields and ``solve`` against the exact results of G²RPO App. A, C, D."""

import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close
from hypothesis import given
from hypothesis import strategies as st
from strategies import gains, interior_simplex_points, verifier_noise

import simplexlab as sl
from simplexlab.theory import (
    adaptive_field_j1,
    collision_field,
    good_bonus_field_j1,
    inner_gain,
)

TIGHT = dict(rtol=1e-11, atol=1e-13)


def V(u):
    u = np.asarray(u)
    return u * u - np.sum(u * u) * u


def random_state(rng, K, M, p=None):
    y = rng.dirichlet(np.ones(K))
    z = rng.dirichlet(np.ones(M))
    return sl.make_state(rng.uniform(0.05, 0.95) if p is None else p, y, z)


# --------------------------------------------------------------------------- exact solutions


def lemma_a11_good(q, I):
    """Lemma A.11: y_j ∝ q_j/(1 − I q_j), τ(I) = −Σ log(1 − I q_j)."""
    w = q / (1.0 - I[:, None] * q)
    return w / w.sum(-1, keepdims=True), -np.log1p(-I[:, None] * q).sum(-1)


def remark_a12_bad(q, I):
    """Remark A.12: z_m ∝ q_m/(1 + I q_m), τ(I) = Σ log(1 + I q_m)."""
    w = q / (1.0 + I[:, None] * q)
    return w / w.sum(-1, keepdims=True), np.log1p(I[:, None] * q).sum(-1)


@pytest.mark.parametrize("K", [2, 3, 5, 8])
def test_lemma_a11_good_block_closed_form(K):
    """Lemma A.11: the collision flow dy/dτ = V(y) in inner time (GRPO, eq. 25)."""
    rng = np.random.default_rng(K)
    q = rng.dirichlet(np.ones(K))
    I = np.linspace(0.0, 0.97 / q.max(), 25)
    y_exact, taus = lemma_a11_good(q, I)
    s0 = sl.make_state(0.99, q, np.array([0.5, 0.5]))
    sol = sl.solve(sl.GRPO(), s0, t1=taus[-1], time="inner", saveat=taus, **TIGHT)
    assert not bool(sol.stopped)
    err = np.max(np.abs(np.asarray(sol.y) - y_exact))
    assert err <= 1e-8, err
    assert_close(sol.tau, taus, rtol=0, atol=1e-14)


@pytest.mark.parametrize("M", [2, 3, 5, 8])
def test_remark_a12_bad_block_closed_form(M):
    """Remark A.12: dz/dτ = −V(z) (eq. 26) has z_m ∝ q_m/(1 + I q_m)."""
    rng = np.random.default_rng(100 + M)
    q = rng.dirichlet(np.ones(M))
    I = np.linspace(0.0, 40.0, 25)
    z_exact, taus = remark_a12_bad(q, I)
    s0 = sl.make_state(0.99, np.array([0.5, 0.5]), q)
    sol = sl.solve(sl.GRPO(), s0, t1=taus[-1], time="inner", saveat=taus, **TIGHT)
    assert not bool(sol.stopped)
    err = np.max(np.abs(np.asarray(sol.z) - z_exact))
    assert err <= 1e-8, err


@pytest.mark.parametrize("solver,order", [("heun", 2), ("tsit5", 5)])
def test_order_of_convergence(solver, order):
    """Fixed-step error against Lemma A.11 decays like h^order."""
    q = np.array([0.5, 0.3, 0.2])
    I = np.array([1.6])
    y_exact, taus = lemma_a11_good(q, I)
    s0 = sl.make_state(0.99, q, np.array([0.5, 0.5]))
    hs = taus[0] / np.array([8, 16, 32, 64]) if order == 5 else taus[0] / np.array(
        [32, 64, 128, 256])
    errs = []
    for h in hs:
        sol = sl.solve(sl.GRPO(), s0, t1=taus[0], time="inner", saveat=taus, solver=solver,
                       adaptive=False, dt0=h)
        errs.append(np.max(np.abs(np.asarray(sol.y[-1]) - y_exact[-1])))
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert abs(slope - order) < 0.3, (slope, errs)


# --------------------------------------------------------------------------- App. A asymptotics


def test_corollary_a10_envelopes_hold_along_trajectories():
    """Corollary A.10: L(0) − 2τ ≤ L(τ) ≤ L(0) − (1/K + 1/M) τ for the bad-mass logit."""
    rng = np.random.default_rng(7)
    for K, M in [(3, 2), (5, 4)]:
        s0 = random_state(rng, K, M, p=0.8)
        dyn = sl.GRPO(verifier=sl.Verifier(0.1, 0.05))
        sol = sl.solve(dyn, s0, t1=8.0, time="inner", n_save=81, **TIGHT)
        p, tau = np.asarray(sol.p), np.asarray(sol.tau)
        p0 = 0.8
        lower = 1.0 / (1.0 + (1 - p0) / p0 * np.exp(2 * tau))
        upper = 1.0 / (1.0 + (1 - p0) / p0 * np.exp((1 / K + 1 / M) * tau))
        np.testing.assert_allclose(sl.theory.bad_mass_envelopes(tau, p0, K, M),
                                   (lower, upper), rtol=1e-14)
        assert np.all(p >= lower * (1 - 1e-9)) and np.all(p <= upper * (1 + 1e-9))
        # and the envelopes are not vacuous: p is strictly inside somewhere
        assert np.any(p > lower * 1.01) and np.any(p < upper * 0.99)


def test_prop_a8_polarization_rate():
    """Prop. A.8: 1 − L_y = Θ(e^{−τ}) — fitted slope of log(1 − L_y) vs τ is −1 ± 0.05."""
    s0 = sl.make_state(1 - 1e-6, np.array([0.4, 0.35, 0.25]), np.array([0.7, 0.3]))
    taus = np.linspace(8.0, 16.0, 33)
    sol = sl.solve(sl.GRPO(), s0, t1=16.0, time="inner", saveat=taus, **TIGHT)
    assert not bool(sol.stopped)
    slope = np.polyfit(taus, np.log(1.0 - np.asarray(sol.L_y)), 1)[0]
    assert abs(slope + 1.0) < 0.05, slope
    # Theorem A.7: the initial winner wins; Corollary A.9: z → uniform, algebraically slowly
    # (Remark A.12: |z − 1/M| = O(1/I) with τ ≈ M log I, i.e. O(e^{−τ/M}))
    assert int(np.argmax(sol.y[-1])) == 0
    dev = np.abs(np.asarray(sol.z)[:, 0] - 0.5)
    assert np.all(np.diff(dev) < 0) and dev[-1] < 2 * np.exp(-16.0 / 2)


def test_prop_c3_bad_mass_vanishes_under_adaptive_gain():
    """Prop. C.3: with λ = λ0 sqrt(p/(1−p)), λ0 > 1, p(t) → 0 (even with a transient ṗ > 0)."""
    y0 = np.array([0.96, 0.03, 0.01])  # far from uniform: the p-leak makes ṗ > 0 at first
    s0 = sl.make_state(0.3, y0, np.array([0.5, 0.5]))
    dyn = sl.GoodBonus(sl.ScheduleA(3.0))
    assert float(dyn.vector_field(0.0, s0).p) > 0  # the transient exists
    sol = sl.solve(dyn, s0, t1=200.0, time="inner", n_save=201)
    assert bool(sol.stopped)  # reached the p_floor = 1e-12 boundary
    assert float(sol.p[-1]) < 1e-11
    assert np.all(np.isfinite(np.asarray(sol.y))) and np.all(np.isfinite(np.asarray(sol.t)))
    assert_close(sol.y[-1], np.full(3, 1 / 3), atol=1e-6, rtol=0)
    # physical time: p decreases towards 0 as well
    solt = sl.solve(dyn, s0, t1=2000.0, n_save=5)
    assert float(solt.p[-1]) < 0.01 < float(solt.p[0])


# --------------------------------------------------------------------------- field identities


@given(y=interior_simplex_points(min_n=1, max_n=6), z=interior_simplex_points(min_n=1, max_n=6),
       p=st.floats(0.01, 0.99), lam0=gains(0.0, 4.0), noise=verifier_noise())
def test_schedule_b_inner_y_field_is_one_minus_lambda0_times_V(y, z, p, lam0, noise):
    """G²RPO eq. (68): under schedule B the neutralized inner-time y-field is (1 − λ0) V(y)."""
    dyn = sl.Neutralized(sl.ScheduleB(lam0), verifier=sl.Verifier(*noise), eta=0.7)
    s = sl.make_state(p, y, z)
    f = dyn.inner_vector_field(0.0, s)
    assert_close(f.y, (1.0 - lam0) * V(y), atol=1e-12, rtol=1e-10)
    # (69) for z
    Ly, Lz, K = np.sum(y * y), np.sum(z * z), len(y)
    assert_close(f.z, -(1 + lam0 * (Ly - 1 / K) / (Lz + 1 / K)) * V(z), atol=1e-12, rtol=1e-10)


@given(y=interior_simplex_points(min_n=1, max_n=6), z=interior_simplex_points(min_n=1, max_n=6),
       p=st.floats(0.01, 0.99), lam=gains(0.0, 4.0), noise=verifier_noise(),
       schedule=st.sampled_from(["const", "A", "B"]))
def test_neutralized_p_dot_equals_baseline(y, z, p, lam, noise, schedule):
    """G²RPO eq. (56): the neutralized field's ṗ equals the baseline GRPO ṗ at the same state."""
    gain = {"const": sl.ConstantGain, "A": sl.ScheduleA, "B": sl.ScheduleB}[schedule](lam)
    ver = sl.Verifier(*noise)
    s = sl.make_state(p, y, z)
    neu = sl.Neutralized(gain, verifier=ver, eta=1.3).vector_field(0.0, s).p
    base = sl.GRPO(verifier=ver, eta=1.3).vector_field(0.0, s).p
    assert_close(neu, base, rtol=1e-12, atol=1e-14)


@given(y=interior_simplex_points(min_n=1, max_n=6), z=interior_simplex_points(min_n=1, max_n=6),
       p=st.floats(0.01, 0.99), lam=gains(0.0, 4.0), eta=st.floats(0.1, 2.0))
def test_j1_closed_forms_equal_general_forms(y, z, p, lam, eta):
    """(49) and (51) (perfect verifier) equal the general noisy forms (48) at δ = 0."""
    s = sl.make_state(p, y, z)
    for got, want in [
        (sl.GoodBonus(sl.ConstantGain(lam), eta=eta).vector_field(0.0, s),
         good_bonus_field_j1(s, lam, eta)),
        (sl.GoodBonus(sl.ScheduleA(lam), eta=eta).vector_field(0.0, s),
         adaptive_field_j1(s, lam, eta)),
    ]:
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            assert_close(a, b, rtol=1e-11, atol=1e-13)


@given(y=interior_simplex_points(min_n=1, max_n=5), z=interior_simplex_points(min_n=1, max_n=5),
       p=st.floats(0.02, 0.98), lam=gains(0.0, 3.0), noise=verifier_noise())
def test_inner_time_forms_match_paper(y, z, p, lam, noise):
    """Inner-time forms: (25)–(27) baseline, (47) good-only, (57)–(58) neutralized, (63)–(64)."""
    ver = sl.Verifier(*noise)
    s = sl.make_state(p, y, z)
    Ly, Lz, K = np.sum(y * y), np.sum(z * z), len(y)
    J = 1 - noise[0] - noise[1]
    q = (1 - noise[0]) - J * p
    sigma = np.sqrt(q * (1 - q))
    lt = sigma * lam / (J * p)  # (59)
    assert_close(inner_gain(p, lam, ver), lt, rtol=1e-12)
    base = sl.GRPO(verifier=ver, eta=0.5).inner_vector_field(0.0, s)
    assert_close(base.y, V(y), atol=1e-13)
    assert_close(base.z, -V(z), atol=1e-13)
    assert_close(base.p, -p * (1 - p) * (Ly + Lz), rtol=1e-12)
    good = sl.GoodBonus(sl.ConstantGain(lam), verifier=ver, eta=0.5).inner_vector_field(0.0, s)
    assert_close(good.y, (1 - lt) * V(y), atol=1e-12, rtol=1e-10)
    neu = sl.Neutralized(sl.ConstantGain(lam), verifier=ver, eta=0.5).inner_vector_field(0.0, s)
    assert_close(neu.y, (1 - lt * (Lz + 1 / K) / (Ly + Lz)) * V(y), atol=1e-12, rtol=1e-10)
    assert_close(neu.z, -(1 + lt * (Ly - 1 / K) / (Ly + Lz)) * V(z), atol=1e-12, rtol=1e-10)
    neu_a = sl.Neutralized(sl.ScheduleA(lam), verifier=ver).inner_vector_field(0.0, s)
    assert_close(neu_a.y, (1 - lam * (Lz + 1 / K) / (Ly + Lz)) * V(y), atol=1e-12, rtol=1e-10)
    assert_close(neu_a.z, -(1 + lam * (Ly - 1 / K) / (Ly + Lz)) * V(z), atol=1e-12, rtol=1e-10)


def _generic_drift(P, A, eta):
    """Independent first-order drift: E[ΔP] = η J(P)² A (G²RPO eq. 31), pushed to (p, y, z)
    with the quotient rule (15). Plain NumPy."""
    Jm = np.diag(P) - np.outer(P, P)
    return eta * Jm @ Jm @ A


@given(y=interior_simplex_points(min_n=1, max_n=5), z=interior_simplex_points(min_n=1, max_n=5),
       p=st.floats(0.02, 0.98), lam=gains(0.0, 3.0), noise=verifier_noise(),
       eta=st.floats(0.1, 2.0))
def test_fields_equal_generic_jacobian_squared_drift(y, z, p, lam, noise, eta):
    """(22), (48), (56) equal η J(P)² (A + B) pushed to (p, y, z), with a_g = Jp/σ,
    a_b = −J(1−p)/σ (App. A.2) and B = (B*, B_b 1) — the generic J(P)²B cross-check."""
    K = len(y)
    ver = sl.Verifier(*noise)
    J = 1 - noise[0] - noise[1]
    q = (1 - noise[0]) - J * p
    sigma = np.sqrt(q * (1 - q))
    P = np.concatenate([(1 - p) * y, p * z])
    A = np.concatenate([np.full(K, J * p / sigma), np.full(len(z), -J * (1 - p) / sigma)])
    Bg = lam * (1 / (K * y) - 1)
    Ly, Lz = np.sum(y * y), np.sum(z * z)
    Bb = lam * (1 / K - Ly) / (p * (Ly + Lz))
    s = sl.make_state(p, y, z)
    for dyn, B in [
        (sl.GRPO(verifier=ver, eta=eta), np.zeros(len(P))),
        (sl.GoodBonus(sl.ConstantGain(lam), verifier=ver, eta=eta),
         np.concatenate([Bg, np.zeros(len(z))])),
        (sl.Neutralized(sl.ConstantGain(lam), verifier=ver, eta=eta),
         np.concatenate([Bg, np.full(len(z), Bb)])),
    ]:
        dP = _generic_drift(P, A + B, eta)
        dp = dP[K:].sum()
        dy = (dP[:K] + y * dp) / (1 - p)  # eq. (15)
        dz = (dP[K:] - z * dp) / p
        f = dyn.vector_field(0.0, s)
        scale = 1 + np.max(np.abs(B))
        assert_close(f.p, dp, atol=1e-12 * scale, rtol=1e-9)
        assert_close(f.y, dy, atol=1e-12 * scale, rtol=1e-9)
        assert_close(f.z, dz, atol=1e-12 * scale, rtol=1e-9)


# --------------------------------------------------------------------------- solve mechanics


def test_vmap_over_states_and_gains_matches_single_solves():
    rng = np.random.default_rng(3)
    states = [random_state(rng, 3, 2) for _ in range(4)]
    lams = jnp.array([0.0, 0.5, 1.0, 2.0])
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *states)

    def one(s, lam):
        return sl.solve(sl.Neutralized(sl.ScheduleB(lam)), s, t1=3.0, time="inner", n_save=7)

    sols = eqx.filter_vmap(one)(batch, lams)
    assert sols.y.shape == (4, 7, 3) and sols.tau.shape == (4, 7)
    for i in (0, 3):
        single = one(states[i], float(lams[i]))
        assert_close(sols.y[i], single.y, rtol=1e-9, atol=1e-12)
        assert_close(sols.t[i], single.t, rtol=1e-9, atol=1e-12)


def _programs_compiled(fn):
    """The number of programs XLA compiled while ``fn()`` ran (``jax.monitoring``)."""
    import jax.monitoring as mon

    count = [0]

    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            count[0] += 1

    mon.register_event_duration_secs_listener(listen)
    try:
        jax.block_until_ready(fn())
    finally:
        unregister = getattr(mon, "unregister_event_duration_listener", None)
        if unregister is not None:
            unregister(listen)
    return count[0]


@pytest.mark.parametrize("system", ["GRPO", "FiniteGroup"])
def test_a_solve_compiles_one_program(system):
    """A new system compiles one program in ``solve`` and one in ``solve_ensemble``: the
    integration's (the checks around it run on the host, the save points of a new number of
    them are one more small program, made eagerly for the bits of the committed results:
    ``_solve.py``); and in a fresh process the checks that ``solve`` attaches to a system's
    parameters (:meth:`checked`: η, the verifier's rates) compile nothing (in ``jax.numpy``
    they compiled three programs in every process)."""
    from simplexlab.shaping import group_rule
    from simplexlab.theory import FiniteGroup

    dyn = (sl.GRPO(eta=0.7, verifier=sl.Verifier(0.1, 0.05)) if system == "GRPO" else
           FiniteGroup(group_rule("grpo"), group_size=4, verifier=sl.Verifier(0.1, 0.05)))
    s0 = sl.make_state(0.6, np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4]))
    batch = sl.make_state(np.array([0.3, 0.6]), np.tile([0.5, 0.3, 0.2], (2, 1)),
                          np.tile([0.6, 0.4], (2, 1)))
    warm = sl.Neutralized(sl.ScheduleA(1.0))  # a process's one-off programs: diffrax's, the
    sl.solve(warm, s0, t1=0.5, n_save=173)  # save points'
    sl.solve_ensemble(warm, batch, t1=0.5, n_save=179)
    assert _programs_compiled(lambda: sl.solve(dyn, s0, t1=1.3, n_save=173)) == 1
    assert _programs_compiled(lambda: sl.solve_ensemble(dyn, batch, t1=1.3, n_save=179)) == 1
    fresh = 181 if system == "GRPO" else 183  # a number of save points no other solve used
    assert _programs_compiled(lambda: sl.solve(dyn, s0, t1=1.3, n_save=fresh)) == 2
    build = ("sl.GRPO(eta=0.7, verifier=sl.Verifier(0.1, 0.05))" if system == "GRPO" else
             "FiniteGroup(group_rule('grpo'), group_size=4, verifier=sl.Verifier(0.1, 0.05))")
    code = ("import jax\njax.config.update('jax_enable_x64', True)\n"
            "import jax.monitoring as mon\nn = []\n"
            "mon.register_event_duration_secs_listener(lambda e, d, **k: n.append(e) if e == "
            "'/jax/core/compile/backend_compile_duration' else None)\n"
            "import simplexlab as sl\nfrom simplexlab.shaping import group_rule\n"
            "from simplexlab.theory import FiniteGroup\n"
            f"dyn = {build}\nn.clear()\ndyn.checked()\nprint(len(n))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["0"], out


def test_physical_and_inner_time_agree():
    """τ(t) reported by a physical-time solve maps onto an inner-time solve of the same system."""
    s0 = sl.make_state(0.6, np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4]))
    dyn = sl.Neutralized(sl.ScheduleA(1.5), verifier=sl.Verifier(0.05, 0.1))
    phys = sl.solve(dyn, s0, t1=5.0, n_save=11, **TIGHT)
    inner = sl.solve(dyn, s0, t1=float(phys.tau[-1]), time="inner", saveat=phys.tau, **TIGHT)
    assert_close(inner.t, phys.t, rtol=1e-7, atol=1e-9)
    assert_close(inner.y, phys.y, rtol=1e-7, atol=1e-9)
    assert_close(inner.p, phys.p, rtol=1e-7, atol=1e-9)
    # the simplex stays a simplex and the policy stays a policy
    assert_close(np.asarray(phys.y).sum(-1), 1.0, atol=1e-12)


def test_boundary_rule_holds_state_and_never_emits_nan():
    s0 = sl.make_state(0.5, np.array([0.7, 0.3]), np.array([1.0]))
    sol = sl.solve(sl.GRPO(), s0, t1=100.0, time="inner", n_save=11)
    assert bool(sol.stopped) and float(sol.t_end) < 100.0
    for leaf in (sol.p, sol.y, sol.z, sol.t, sol.tau):
        assert np.all(np.isfinite(np.asarray(leaf)))
    past = np.asarray(sol.ts) > float(sol.t_end)
    assert past.sum() >= 2
    assert np.all(np.asarray(sol.p)[past] == np.asarray(sol.p)[past][0])
    assert float(sol.p[-1]) < 1e-12


def test_state_from_policy_round_trip(rng):
    P = rng.dirichlet(np.ones(7))
    s = sl.theory.state_from_policy(P, 4)
    assert_close(s.policy(), P, atol=1e-15)
    assert_close(collision_field(s.y).sum(), 0.0, atol=1e-15)


# --------------------------------------------------------------------------- bad input

Y, Z = np.array([0.5, 0.5]), np.array([1.0])


@pytest.mark.parametrize(
    "p,y,z,match",
    [
        (0.5, np.array([0.6, 0.6]), Z, "simplex"),
        (0.5, np.array([1.2, -0.2]), Z, "non-negative"),
        (0.0, Y, Z, r"open interval \(0, 1\)"),
        (1.0, Y, Z, r"open interval \(0, 1\)"),
        (1.5, Y, Z, r"open interval \(0, 1\)"),
        (-0.1, Y, Z, r"open interval \(0, 1\)"),
        (np.nan, Y, Z, "finite"),
        (0.5, np.array([np.inf, 0.0]), Z, "finite"),
        (0.5, np.array([]), Z, "K >= 1"),
        (0.5, Y, np.array([]), "M >= 1"),
        (np.array([0.5, 0.5]), Y, Z, "batch shapes"),
    ],
)
def test_bad_state_raises_eagerly(p, y, z, match):
    with pytest.raises(ValueError, match=match):
        sl.make_state(p, y, z)


@pytest.mark.parametrize(
    "p,y,match",
    [
        (1.5, Y, "open interval"),
        (0.5, np.array([0.6, 0.6]), "simplex"),
        (0.5, np.array([1.2, -0.2]), "non-negative"),
        (np.nan, Y, "finite"),
    ],
)
def test_bad_state_raises_under_jit(p, y, match):
    f = jax.jit(lambda p, y: sl.make_state(p, y, jnp.array([1.0])))
    with pytest.raises(Exception, match=match):
        jax.block_until_ready(f(jnp.asarray(p), jnp.asarray(y)))


def test_bad_state_raises_inside_vmapped_solve():
    s = sl.make_state(0.5, Y, Z)
    ps = jnp.array([0.5, 1.5])

    def run(p):
        return sl.solve(sl.GRPO(), sl.State(p, s.y, s.z), t1=1.0, n_save=2).p

    with pytest.raises(Exception, match="open interval"):
        jax.block_until_ready(jax.vmap(run)(ps))


def test_flipped_verifier_needs_explicit_opt_in():
    with pytest.raises(ValueError, match="J <= 0"):
        sl.Verifier(0.6, 0.5)
    with pytest.raises(ValueError, match="rate in"):
        sl.Verifier(-0.1, 0.0)
    with pytest.raises(ValueError, match="finite"):
        sl.Verifier(np.nan, 0.0)
    ver = sl.Verifier(0.6, 0.5, allow_flipped=True)
    assert float(ver.J) < 0
    s = sl.make_state(0.5, np.array([0.6, 0.4]), Z)
    sol = sl.solve(sl.GRPO(verifier=ver), s, t1=1.0, n_save=3)  # J < 0: the flow runs backwards
    assert float(sol.p[-1]) > 0.5
    with pytest.raises(ValueError, match="J > 0"):
        sl.solve(sl.GRPO(verifier=ver), s, t1=1.0, time="inner")


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="finite"):
        sl.ConstantGain(np.nan)
    with pytest.raises(ValueError, match="finite"):
        sl.ScheduleB(np.inf)
    with pytest.raises(ValueError, match="finite"):
        sl.GRPO(eta=np.inf)
    s = sl.make_state(0.5, Y, Z)
    with pytest.raises(ValueError, match="time must be"):
        sl.solve(sl.GRPO(), s, t1=1.0, time="wall")
    with pytest.raises(ValueError, match="unknown solver"):
        sl.solve(sl.GRPO(), s, t1=1.0, solver="rk99")
    with pytest.raises(ValueError, match="t1 > t0"):
        sl.solve(sl.GRPO(), s, t1=-1.0)
    with pytest.raises(ValueError, match="saveat"):
        sl.solve(sl.GRPO(), s, t1=1.0, saveat=[0.0, 2.0])
    with pytest.raises(ValueError, match="off the simplex|simplex"):
        sl.solve(sl.GRPO(), sl.State(jnp.asarray(0.5), jnp.array([0.9, 0.3]), jnp.array([1.0])),
                 t1=1.0)
    # traced gain that is not finite: runtime error under jit
    f = jax.jit(lambda lam: sl.solve(sl.GoodBonus(sl.ConstantGain(lam)), s, t1=1.0, n_save=2).p)
    with pytest.raises(Exception, match="finite"):
        jax.block_until_ready(f(jnp.asarray(np.nan)))


def _random_ensemble(seed: int, n: int):
    """``n`` random states (K = 3, M = 2), gains in [0, 3] and a noisy verifier."""
    rng = np.random.default_rng(seed)
    states = sl.State(jnp.asarray(rng.uniform(0.2, 0.9, n)),
                      jnp.asarray(rng.dirichlet(np.ones(3), n)),
                      jnp.asarray(rng.dirichlet(np.ones(2), n)))
    return states, jnp.asarray(rng.uniform(0.0, 3.0, n)), sl.Verifier(0.05, 0.1)


class _LoopedNeutralized(sl.Neutralized):
    stage_loop = True  # the stages in a loop, as the finite-group theory runs them


def test_stages_in_a_loop_equal_the_stages_written_out():
    """solve_ensemble's stage loop (one copy of the field in the program: ``stage_loop``) takes
    the same steps to the same trajectories as the stages written out, for the order-5 and
    order-8 pairs; a wrong tableau row in the loop would move them by far more."""
    states, lam, ver = _random_ensemble(5, 8)
    for solver in ("tsit5", "dopri8"):
        a = sl.solve_ensemble(sl.Neutralized(sl.ScheduleB(lam), verifier=ver), states,
                              t1=20.0, n_save=5, solver=solver)
        b = sl.solve_ensemble(_LoopedNeutralized(sl.ScheduleB(lam), verifier=ver), states,
                              t1=20.0, n_save=5, solver=solver)
        assert int(a.num_steps[0]) == int(b.num_steps[0]), solver
        for x, y in [(a.p, b.p), (a.y, b.y), (a.z, b.z), (a.tau, b.tau)]:
            assert_close(x, y, rtol=1e-12, atol=1e-13)


@pytest.mark.slow
def test_solve_ensemble_matches_vmapped_solve_and_freezes_at_the_boundary():
    """The one-system ensemble path equals vmap(solve) to tolerance; trajectories that reach the
    boundary are frozen individually (finite, flagged) while the others go on."""
    n = 16
    states, lam, ver = _random_ensemble(11, n)
    ens = sl.solve_ensemble(sl.Neutralized(sl.ScheduleB(lam), verifier=ver), states, t1=20.0,
                            n_save=11)
    ref = eqx.filter_vmap(
        lambda s, g: sl.solve(sl.Neutralized(sl.ScheduleB(g), verifier=ver), s, t1=20.0,
                              n_save=11))(states, lam)
    for a, b in [(ens.p, ref.p), (ens.y, ref.y), (ens.z, ref.z), (ens.tau, ref.tau)]:
        assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert not np.any(np.asarray(ens.stopped))
    # the order-8 pair, its 14 stages written out by solve_ensemble: the same trajectories
    ens8 = sl.solve_ensemble(sl.Neutralized(sl.ScheduleB(lam), verifier=ver), states, t1=20.0,
                             n_save=11, solver="dopri8")
    for a, b in [(ens8.p, ref.p), (ens8.y, ref.y), (ens8.z, ref.z), (ens8.tau, ref.tau)]:
        assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert int(ens8.num_steps[0]) < int(ens.num_steps[0])
    # boundary: half of the trajectories start near p = 0 and reach the floor in inner time
    p0 = jnp.where(jnp.arange(n) < n // 2, 1e-9, 0.5)
    ens = sl.solve_ensemble(sl.GRPO(), sl.State(p0, states.y, states.z), t1=12.0, time="inner",
                            n_save=13)
    stopped = np.asarray(ens.stopped)
    assert stopped[: n // 2].all() and not stopped[n // 2:].any()
    for leaf in (ens.p, ens.y, ens.z, ens.t, ens.tau):
        assert np.all(np.isfinite(np.asarray(leaf)))
    assert np.all(np.asarray(ens.p)[: n // 2, -1] < 1e-12)
    assert_close(np.asarray(ens.y).sum(-1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="one batch axis"):
        sl.solve_ensemble(sl.GRPO(), sl.make_state(0.5, Y, Z), t1=1.0)


def test_solve_each_is_vmapped_solve_checked_on_the_host():
    """``solve_each`` gives vmap(solve)'s numbers bit for bit; bad states are a ValueError and a
    failed integration an EquinoxRuntimeError naming it, both from the host."""
    from simplexlab.theory.internal import solve_each

    rng = np.random.default_rng(13)
    states = sl.State(jnp.asarray([0.3, 0.6, 0.8]), jnp.asarray(rng.dirichlet(np.ones(3), 3)),
                      jnp.asarray(rng.dirichlet(np.ones(2), 3)))
    dyn = sl.Neutralized(sl.ScheduleB(1.5))
    ref = eqx.filter_vmap(lambda s: sl.solve(dyn, s, t1=3.0, time="inner", n_save=5))(states)
    got = solve_each(dyn, states, t1=3.0, time="inner", n_save=5)
    for a, b in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="open interval"):
        solve_each(dyn, sl.State(jnp.asarray([0.3, 1.5, 0.8]), states.y, states.z), t1=3.0)
    with pytest.raises(eqx.EquinoxRuntimeError, match="solve_each.*maximum number of solver"):
        solve_each(dyn, states, t1=3.0, time="inner", n_save=5, max_steps=2)


def test_solve_block_returns_the_result_codes_for_the_host():
    """``solve_block`` (the sweep engine's, traced) has no run-time check: it returns diffrax's
    result code per trajectory, and ``check_result_codes`` raises on the host naming the
    failure (one program: a short interval fits in ``max_steps``, a long one does not)."""
    from simplexlab.theory.internal import check_result_codes, solve_block

    states = sl.State(jnp.asarray([0.3, 0.6]), jnp.full((2, 3), 1 / 3), jnp.full((2, 2), 0.5))
    run = jax.jit(lambda s, ts: solve_block(sl.GRPO(), s, saveat=ts, max_steps=16))
    sol, codes = run(states, jnp.linspace(0.0, 0.5, 3))
    assert codes.shape == (2,) and np.all(np.isfinite(np.asarray(sol.p)))
    check_result_codes(codes, "ok")
    _, codes = run(states, jnp.linspace(0.0, 500.0, 3))
    with pytest.raises(eqx.EquinoxRuntimeError,
                       match=r"the sweep: the integration failed \(2 of the 2 .*maximum number"):
        check_result_codes(codes, "the sweep")


def test_solve_ensemble_in_blocks_is_each_block_solved_alone():
    """``block``: 6 trajectories in blocks of 4 are bit for bit the solve of the first 4 and the
    solve of the last 2 padded with copies of the last one (per-trajectory gains split with
    them, the shared verifier not), with each block's step count; a bad block is named."""
    rng = np.random.default_rng(12)
    n, block = 6, 4
    states = sl.State(jnp.asarray(rng.uniform(0.2, 0.9, n)),
                      jnp.asarray(rng.dirichlet(np.ones(3), n)),
                      jnp.asarray(rng.dirichlet(np.ones(2), n)))
    lam = jnp.asarray(rng.uniform(0.0, 3.0, n))
    ver = sl.Verifier(0.05, 0.1)

    def solve(idx, **kw):
        sub = jax.tree_util.tree_map(lambda x: x[np.asarray(idx)], states)
        return sl.solve_ensemble(sl.Neutralized(sl.ScheduleB(lam[np.asarray(idx)]),
                                                verifier=ver), sub, t1=5.0, n_save=4, **kw)

    ens = solve(range(n), block=block)
    parts = [solve([0, 1, 2, 3]), solve([4, 5, 5, 5])]
    for leaf in ("p", "y", "z", "t", "tau", "stopped", "t_end", "num_steps"):
        whole = np.asarray(getattr(ens, leaf))
        alone = np.concatenate([np.asarray(getattr(parts[0], leaf)),
                                np.asarray(getattr(parts[1], leaf))[:2]])
        assert whole.shape == alone.shape and np.array_equal(whole, alone), leaf
    np.testing.assert_array_equal(np.asarray(ens.ts), np.asarray(parts[0].ts))
    with pytest.raises(ValueError, match="block"):
        solve(range(n), block=0)
