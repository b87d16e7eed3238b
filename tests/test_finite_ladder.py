"""The finite-group ladder (experiments/finite_group_ladder.py), its two rungs checked on their own:

1. the finite-G GRPO field tends to G²RPO eq. (22) like c/G: at one state, (ṗ_G − ṗ_∞)·G
   settles (its changes shrink geometrically over G = 4, 8, 16, 32) with one sign;
2. the bandit's own sampler agrees with the finite-G theory at a small G: one SGD step from one
   policy over many independent prompts, the empirical mean logit step over η equals
   ``FiniteGroup.theta_drift`` within 4 standard errors, for GRPO and for G²RPO (constant gain,
   no neutralizer: eq. 48); and the ṗ it implies (pushed to (p, y, z) here, by hand) is
   resolved away from the G → ∞ field (eq. 22 / 48): more than 4 standard errors off.
"""

import equinox as eqx
import jax
import numpy as np

import simplexlab as sl
from simplexlab.shaping import GainSchedule, meanfield_system
from simplexlab.sim import Bandit

Y0, Z0 = (0.5, 0.3, 0.2), (0.7, 0.3)


def _pdot(p, y, z, g):
    """ṗ of the logit drift g (K = 3): p(1 − p)(⟨z, g_z⟩ − ⟨y, g_y⟩), written out here."""
    return p * (1 - p) * (z @ g[3:] - y @ g[:3])


def test_grpo_field_gap_times_g_settles():
    jax.config.update("jax_enable_x64", True)
    s0 = sl.make_state(0.6, np.array(Y0), np.array(Z0))
    p_inf = float(meanfield_system("grpo").vector_field(0.0, s0).p)
    scaled = []
    for G in (4, 8, 16, 32):
        dyn = meanfield_system("grpo", group_size=G)
        p_G = float(eqx.filter_jit(lambda d, s: d.vector_field(0.0, s))(dyn, s0).p)
        scaled.append((p_G - p_inf) * G)
    scaled = np.array(scaled)
    steps = np.abs(np.diff(scaled))
    assert np.all(np.sign(scaled) == np.sign(scaled[-1])) and abs(scaled[-1]) > 1e-3, scaled
    assert steps[1] < 0.6 * steps[0] and steps[2] < 0.6 * steps[1], scaled  # settles
    assert steps[2] < 0.1 * abs(scaled[-1]), scaled  # within 10 % of its limit at G = 32


def test_bandit_step_follows_finite_g_not_the_limit():
    jax.config.update("jax_enable_x64", True)
    G, eta, p0, n = 4, 0.01, 0.6, 20_000
    for method, sch in (("grpo", None),
                        ("g2rpo", GainSchedule(kind="constant", gain=1.5, neutralize=False))):
        kw = {} if sch is None else {"schedule": sch}
        sim = Bandit(K=3, M=2, method=method, num_prompts=n, max_group_size=G, y0=Y0, z0=Z0,
                     **kw)
        params = {**sim.default_params(), "group_size": float(G), "eta": eta, "p0": p0}
        st = sim.init(jax.random.key(11), params)
        d = np.asarray(sim.step(st, params).logits - st.logits) / eta  # (n, 5)
        mean, se = d.mean(0), d.std(0, ddof=1) / np.sqrt(n)

        dyn, s0 = sim.finite_group(params)
        one = sl.make_state(s0.p[:1], s0.y[:1], s0.z[:1])
        theta = np.asarray(eqx.filter_jit(lambda f, s: f.theta_drift(0.0, s))(dyn, one))[0]
        assert np.all(np.abs(mean - theta) < 4 * se), (method, mean, theta, se)

        # ṗ of each prompt's step (linear in the step, pushed by hand) against the finite-G
        # field's ṗ (FiniteGroup's push of theta) and the G → ∞ field's (eq. 22 / 48)
        pd = _pdot(p0, np.asarray(Y0), np.asarray(Z0), d.T)
        se_p = pd.std(ddof=1) / np.sqrt(n)
        p_fin = _pdot(p0, np.asarray(Y0), np.asarray(Z0), theta)
        lim, _ = sim.meanfield(params)
        p_inf = float(lim.vector_field(0.0, one).p[0])
        assert abs(pd.mean() - p_fin) < 4 * se_p, (method, pd.mean(), p_fin, se_p)
        assert abs(pd.mean() - p_inf) > 4 * se_p, (method, pd.mean(), p_inf, se_p)
