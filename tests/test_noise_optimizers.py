"""Optimizers in the small-step limit (simplexlab.theory._optimizers, FiniteGroup(optimizer=...)):
the momentum field is the SGD field rescaled, the Adam field is E[g]/(√E[g∘g] + ε) with the
exact second moment of the step, and the bandit run with optax's optimizer follows them (the
SGD field does not). The η ladder is in benchmarks/noise.py."""

import jax
import numpy as np
import pytest

import simplexlab as sl
from simplexlab.shaping import group_rule
from simplexlab.sim import Bandit, trajectory
from simplexlab.theory import (
    SGD,
    Adam,
    AdamW,
    EntropyBonus,
    FiniteGroup,
    Momentum,
    RMSprop,
    Verifier,
    expected_moments,
    optimizer_limit,
)

#: G²RPO/SC's small-step Adam check: GRPO, K = 3, M = 2, π0 = (0.15, 0.1, 0.05 | 0.4, 0.3)
Y0, Z0, P0 = (0.5, 1 / 3, 1 / 6), (4 / 7, 3 / 7), 0.7
S0 = sl.make_state(P0, np.array(Y0), np.array(Z0))
NOISY = Verifier(0.1, 0.05)


def _good_mass(sim, eta, t1, seed=0):
    """Good mass ``1 − p`` of every prompt of the bandit after ``t1 / eta`` steps."""
    params = {**sim.default_params(), "group_size": 8.0, "eta": eta, "p0": P0}
    n = int(round(t1 / eta))
    rec = jax.jit(lambda k: trajectory(sim, k, params, num_steps=n, stride=n)[1])(
        jax.random.key(seed))
    return 1.0 - np.asarray(rec.p)[-1]


def _field_good_mass(optimizer, t1):
    dyn = FiniteGroup(group_rule("grpo"), group_size=8, optimizer=optimizer)
    return 1.0 - float(sl.solve(dyn, S0, t1=t1, n_save=2).p[-1])


@pytest.mark.parametrize("optimizer,eta,t1,tol", [("adam", 2e-4, 0.5, 0.01),
                                                  ("momentum", 1e-3, 0.2, 0.005)])
def test_the_bandit_follows_the_optimizers_field(optimizer, eta, t1, tol):
    """The bandit with optax's Adam (β = (0.9, 0.999), η = 2·10⁻⁴, η/(1 − β2) = 0.2) or heavy
    ball (β = 0.9, η = 10⁻³), G = 8, 64 prompts: its mean good mass at t is within ``tol`` (plus
    4 standard errors) of the optimizer's field, which is more than 10 ``tol`` from SGD's."""
    sim = Bandit(K=3, M=2, method="grpo", num_prompts=64, max_group_size=8, y0=Y0, z0=Z0,
                 optimizer=optimizer)
    good = _good_mass(sim, eta, t1)
    limit = Adam() if optimizer == "adam" else Momentum(beta=0.9, eta=eta)
    field, sgd = _field_good_mass(limit, t1), _field_good_mass(None, t1)
    se = good.std(ddof=1) / np.sqrt(len(good))
    assert abs(good.mean() - field) < tol + 4 * se, (good.mean(), se, field, sgd)
    assert abs(field - sgd) > 10 * tol


def test_momentum_field_is_the_sgd_field_rescaled():
    sgd = FiniteGroup(group_rule("rloo"), group_size=6, verifier=NOISY)
    base = np.asarray(sgd.theta_drift(0.0, S0))
    for nesterov in (False, True):
        limit = FiniteGroup(group_rule("rloo"), group_size=6, verifier=NOISY,
                            optimizer=Momentum(beta=0.8, nesterov=nesterov))
        np.testing.assert_allclose(limit.theta_drift(0.0, S0), base / 0.2, rtol=1e-13)
        # the transient: step n = t/η + 1 moves by (1 − β^n)/(1 − β) (Nesterov: β^(n+1))
        tr = FiniteGroup(group_rule("rloo"), group_size=6, verifier=NOISY,
                         optimizer=Momentum(beta=0.8, nesterov=nesterov, eta=0.01))
        n = 3 + nesterov
        np.testing.assert_allclose(tr.theta_drift(0.02, S0), base * (1 - 0.8**n) / 0.2,
                                   rtol=1e-13)
    np.testing.assert_allclose(FiniteGroup(group_rule("rloo"), group_size=6, verifier=NOISY,
                                           optimizer=SGD()).theta_drift(0.0, S0), base)


def test_adaptive_fields_from_the_step_moments():
    """Adam, AdamW and RMSprop from the mean and E[ĝ∘ĝ] = E[ĝ]² + diag Σ / P of
    expected_moments; the field depends on P (the noise), and tends to E[ĝ]/|E[ĝ]| as P grows."""
    rule = group_rule("grpo", verifier=NOISY)
    probs = S0.policy()
    for P in (1, 4):
        mom = expected_moments(rule, probs, 3, 8, verifier=NOISY, num_groups=P)
        sq = np.asarray(mom.mean) ** 2 + np.diag(np.asarray(mom.covariance))
        np.testing.assert_allclose(mom.squared, sq, rtol=1e-13)
        expect = {Adam(eps=1e-3): mom.mean / (np.sqrt(sq) + 1e-3),
                  AdamW(weight_decay=0.1): mom.mean / (np.sqrt(sq) + 1e-8)
                  - 0.1 * np.log(np.asarray(probs)),
                  RMSprop(eps=1e-3): mom.mean / np.sqrt(sq + 1e-3),
                  RMSprop(eps=1e-3, eps_in_sqrt=False): mom.mean / (np.sqrt(sq) + 1e-3)}
        for opt, want in expect.items():
            dyn = FiniteGroup(rule, group_size=8, verifier=NOISY, optimizer=opt, num_groups=P)
            np.testing.assert_allclose(dyn.theta_drift(0.0, S0), want, rtol=1e-12, err_msg=opt)
    one, four = (FiniteGroup(rule, group_size=8, verifier=NOISY, optimizer=Adam(),
                             num_groups=P).theta_drift(0.0, S0) for P in (1, 4))
    assert np.max(np.abs(one - four)) > 0.05
    big = FiniteGroup(rule, group_size=8, verifier=NOISY, optimizer=Adam(),
                      num_groups=10**8).theta_drift(0.0, S0)
    mean = np.asarray(FiniteGroup(rule, group_size=8, verifier=NOISY).theta_drift(0.0, S0))
    np.testing.assert_allclose(big, np.sign(mean), atol=1e-3)


def test_bad_input_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match=r"b1 must be in \[0, 1\)"):
        Adam(b1=1.0)
    with pytest.raises(ValueError, match=r"b2 must be in \[0, 1\)"):
        AdamW(b2=-0.1)
    with pytest.raises(ValueError, match="eps must be a finite number > 0"):
        Adam(eps=0.0)
    with pytest.raises(ValueError, match="eps must be a finite number > 0"):
        RMSprop(eps=-1e-8)
    with pytest.raises(ValueError, match="schedules of beta are not covered"):
        Momentum(beta=lambda step: 0.9)
    with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0"):
        AdamW(weight_decay=float("nan"))
    with pytest.raises(ValueError, match="clipping by global norm .* not covered"):
        optimizer_limit("adamw", clip_norm=1.0)
    with pytest.raises(ValueError, match="covers the optimizers"):
        optimizer_limit("lion")
    with pytest.raises(ValueError, match="unexpected keyword"):
        optimizer_limit("adam", beta=0.9)
    assert optimizer_limit("nesterov") == Momentum(nesterov=True)
    assert optimizer_limit("adamw", weight_decay=0.01) == AdamW(weight_decay=0.01)
    with pytest.raises(ValueError, match="optimizer must be None"):
        FiniteGroup(group_rule("grpo"), group_size=4, optimizer="adam")
    with pytest.raises(ValueError, match="adaptive entropy bonus"):
        FiniteGroup(group_rule("grpo"), group_size=4, optimizer=Adam(),
                    entropy_bonus=EntropyBonus(adaptive=True))
    assert Adam().lag(2e-4) == pytest.approx(0.2) and SGD().lag(0.1) == 0.0


def test_the_bandits_finite_group_system_takes_its_optimizers_limit():
    """``Bandit.finite_group`` builds the small-step limit of the bandit's own optimizer (the
    names of ``OPTIMIZERS``, optax's defaults): Adam's field is not SGD's, momentum's is SGD's
    over 1 − β after its transient."""
    from simplexlab.sim import Bandit
    from simplexlab.theory import Adam, AdamW, Momentum

    params = {"eta": 0.01, "p0": 0.6, "group_size": 8}
    kinds = {}
    for name in ("sgd", "adam", "adamw", "momentum"):
        dyn, s0 = Bandit(K=2, M=2, optimizer=name, max_group_size=8).finite_group(params)
        kinds[name] = (dyn.optimizer, np.asarray(dyn.vector_field(1.0, s0).p))
    assert kinds["sgd"][0] is None
    assert isinstance(kinds["adam"][0], Adam) and isinstance(kinds["adamw"][0], AdamW)
    mom = kinds["momentum"][0]
    assert isinstance(mom, Momentum) and mom.beta == 0.9 and mom.eta == 0.01
    # at t = 1, step n = t/η + 1 = 101: SGD's field times (1 − 0.9^101)/(1 − 0.9)
    np.testing.assert_allclose(kinds["momentum"][1], 10 * (1 - 0.9**101) * kinds["sgd"][1],
                               rtol=1e-9)
    assert not np.allclose(kinds["adam"][1], kinds["sgd"][1], rtol=0.1)
