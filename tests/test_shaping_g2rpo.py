"""G²RPO bonus: mean-field exactness, neutrality, Listing 1 transcription, safeguards, bad input."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close

from simplexlab import shaping as sh
from simplexlab.theory import Verifier


def make_group(good_counts, bad_counts, *, cluster_bad=True):
    """A group whose empirical ŷ, p̂, ẑ are exactly the given count ratios."""
    r, gid, bid = [], [], []
    for j, n in enumerate(good_counts):
        r += [1.0] * n
        gid += [j] * n
        bid += [-1] * n
    for m, n in enumerate(bad_counts):
        r += [0.0] * n
        gid += [-1] * n
        bid += [m] * n
    return (np.array(r), np.array(gid), np.array(bid) if cluster_bad else None)


GOOD, BAD = [15, 10, 5], [6, 4]  # ŷ = (1/2, 1/3, 1/6), p̂ = 1/4, ẑ = (3/5, 2/5), G = 40
Y = np.array([0.5, 1 / 3, 1 / 6])
P = 0.25
Z = np.array([0.6, 0.4])
LY, LZ, K = (Y**2).sum(), (Z**2).sum(), 3


@pytest.mark.parametrize("schedule", ["constant", "A", "B"])
def test_mean_field_bonus_and_neutralizer(schedule):
    lam0 = 1.5
    lam = {"constant": lam0,
           "A": lam0 * math.sqrt(P / (1 - P)),  # eq. (50)
           "B": lam0 * math.sqrt(P / (1 - P)) * (LY + LZ) / (LZ + 1 / K)}[schedule]  # eq. (67)
    r, gid, bid = make_group(GOOD, BAD)
    cfg = sh.G2RPOConfig(gain=lam0, kind=schedule)
    st = sh.g2rpo_stats(r, gid, bid, config=cfg)
    assert_close(st.gain, lam)
    b_star = lam * (1.0 / (K * Y) - 1.0)  # B*_j, eq. (44)
    assert_close(st.good_bonus[:3], b_star)
    neu = lam * (1 / K - LY) / (P * (LY + LZ))  # eq. (55)
    assert_close(st.bad_bonus, neu)
    bonus = sh.g2rpo_bonus(r, gid, bid, config=cfg)
    assert_close(bonus, np.concatenate([np.repeat(b_star, GOOD), np.full(10, neu)]))
    if schedule == "A":  # eq. (65)
        assert_close(st.bad_bonus, lam0 / math.sqrt(P * (1 - P)) * (1 / K - LY) / (LY + LZ))
    if schedule == "B":  # eq. (70)
        assert_close(st.bad_bonus, lam0 / math.sqrt(P * (1 - P)) * (1 / K - LY) / (LZ + 1 / K))


def _plugin_drift_dp(y, z, p, Bgood, Bbad):
    """s^T J(P)^2 B on the empirical distribution P = ((1-p) y, p z) (G² eq. 31/52), numpy."""
    Pv = np.concatenate([(1 - p) * y, p * z])
    Bv = np.concatenate([Bgood, np.full(len(z), Bbad)])
    s = np.concatenate([np.zeros(len(y)), np.ones(len(z))])
    J = np.diag(Pv) - np.outer(Pv, Pv)
    return s @ J @ J @ Bv


@pytest.mark.parametrize("good,bad,rho,bmax", [
    ([15, 10, 5], [6, 4], 0.0, np.inf),
    ([12, 1, 1, 2], [3, 1, 1], 0.1, 2.0),   # ρ clip and B_max clip both active
    ([7, 1], [1], 0.0, 1.0),
    ([3, 3, 2], [5, 2, 1, 1], 0.2, 0.5),
])
def test_neutralizer_cancels_plugin_drift(good, bad, rho, bmax):
    r, gid, bid = make_group(good, bad)
    cfg = sh.G2RPOConfig(gain=1.5, kind="B", rho=rho, B_max=bmax)
    st = sh.g2rpo_stats(r, gid, bid, config=cfg)
    # independent plug-in estimates
    y = np.array(good, float) / sum(good)
    y = np.maximum(y, rho)
    y = y / y.sum()
    z = np.array(bad, float) / sum(bad)
    p = sum(bad) / (sum(good) + sum(bad))
    assert_close(st.y_hat[:len(good)], y)
    Bg = np.asarray(st.good_bonus[:len(good)])
    if abs(float(st.bad_bonus)) < bmax:  # neutralizer itself not clipped
        assert abs(_plugin_drift_dp(y, z, p, Bg, float(st.bad_bonus))) < 1e-12
    # without it the good bonus alone moves p (so the test can fail)
    assert abs(_plugin_drift_dp(y, z, p, Bg, 0.0)) > 1e-6


def listing1(score, good_labels, bad_labels, lambda0, rho, B_max, bad_mass_neutral=True,
             use_lambda_attenuation=True):
    """Verbatim transcription of G² Listing 1 for one group (pure Python)."""
    C = [i for i in range(len(score)) if score[i] == 1.0]
    W = [i for i in range(len(score)) if score[i] == 0.0]
    bonus = [0.0] * len(score)
    if len(C) < 2:
        return bonus
    p_hat = len(W) / len(score)
    lam_p = lambda0 * math.sqrt(p_hat / max(1e-8, 1 - p_hat)) if 0 < p_hat < 1 else 0.0
    labels = [good_labels[i] for i in C]
    ids = sorted(set(labels))
    K = len(ids)
    y = [labels.count(c) / len(C) for c in ids]
    y = [max(v, rho) for v in y]
    y = [v / sum(y) for v in y]
    Ly = sum(v * v for v in y)
    if len(W) == 0:
        Lz = 0.0
    elif len(W) == 1:
        Lz = 1.0
    else:
        bl = [bad_labels[i] for i in W]
        z = [bl.count(c) / len(W) for c in sorted(set(bl))]
        Lz = sum(v * v for v in z)
    lam = lam_p * (Ly + Lz) / (Lz + 1 / K) if use_lambda_attenuation and W else lam_p
    Bc = [lam * (1 / (K * yj) - 1) for yj in y]
    meanB = sum(a * b for a, b in zip(y, Bc, strict=True))
    Bc = [b - meanB for b in Bc]
    Bc = [min(max(b, -B_max), B_max) for b in Bc]
    if bad_mass_neutral and p_hat > 0 and W:
        m1 = sum(a * b for a, b in zip(y, Bc, strict=True))
        S = sum(a * a * b for a, b in zip(y, Bc, strict=True))
        B_bad = (S - m1 * ((1 - p_hat) * Ly - p_hat * Lz)) / (p_hat * (Ly + Lz))
        B_bad = min(max(B_bad, -B_max), B_max)
    else:
        B_bad = 0.0
    for i in C:
        bonus[i] = Bc[ids.index(good_labels[i])]
    for i in W:
        bonus[i] = B_bad
    return bonus


def test_matches_listing1_on_random_groups():
    rng = np.random.default_rng(3)
    f = jax.jit(lambda r, g, b: sh.g2rpo_bonus(
        r, g, b, config=sh.G2RPOConfig(gain=1.5, kind="B", rho=0.15, B_max=3.0)))
    for _ in range(30):
        G = 16
        r = (rng.random(G) < rng.uniform(0.2, 0.95)).astype(float)
        gid = np.where(r == 1, rng.integers(0, 4, G), -1)
        bid = np.where(r == 0, rng.integers(0, 3, G), -1)
        expected = listing1(list(r), list(gid), list(bid), 1.5, 0.15, 3.0)
        assert_close(f(r, gid, bid), expected, atol=1e-12)


def test_never_divided_by_number_of_bad():
    """Same p̂, ŷ, ẑ with twice the rollouts: identical per-rollout bad bonus (App. D.4)."""
    cfg = sh.G2RPOConfig(kind="B")
    b1 = sh.g2rpo_bonus(*make_group([3, 2, 1], [2, 2]), config=cfg)
    b2 = sh.g2rpo_bonus(*make_group([6, 4, 2], [4, 4]), config=cfg)
    assert_close(b1[-1], b2[-1])
    assert abs(float(b1[-1])) > 1e-3


def test_no_correct_rollouts_is_plain_grpo():
    r = np.zeros(5)
    g = -np.ones(5, int)
    cfg = sh.G2RPOConfig(kind="constant")
    assert_close(sh.g2rpo_bonus(r, g, config=cfg), np.zeros(5))
    assert_close(sh.g2rpo_advantages(r, g, config=cfg), sh.grpo_advantages(r))


def test_p_hat_zero_good_bonus_only():
    r = np.ones(4)
    g = np.array([0, 0, 0, 1])
    b = sh.g2rpo_bonus(r, g, config=sh.G2RPOConfig(gain=1.0, kind="constant"))
    assert_close(b, [1 / (2 * 0.75) - 1] * 3 + [1 / (2 * 0.25) - 1])
    # schedules A/B vanish at p̂ = 0 (λ ∝ sqrt(p̂)), no NaN
    assert_close(sh.g2rpo_bonus(r, g, config=sh.G2RPOConfig(kind="B")), np.zeros(4))


def test_tiny_p_hat_safeguards():
    r, gid, bid = make_group([30, 8], [1])
    base = sh.G2RPOConfig(gain=1.0, kind="constant")
    raw = float(sh.g2rpo_stats(r, gid, bid, config=base).bad_bonus)
    p = 1 / 39
    assert raw != 0
    off = sh.G2RPOConfig(gain=1.0, kind="constant", p_min=0.05)
    assert float(sh.g2rpo_stats(r, gid, bid, config=off).bad_bonus) == 0.0
    damp = sh.G2RPOConfig(gain=1.0, kind="constant", p_damp=0.1)
    t = p / 0.1
    assert_close(sh.g2rpo_stats(r, gid, bid, config=damp).bad_bonus, raw * (3 * t**2 - 2 * t**3))
    clip = sh.G2RPOConfig(gain=1.0, kind="constant", B_max=0.05)
    assert_close(sh.g2rpo_stats(r, gid, bid, config=clip).bad_bonus, np.sign(raw) * 0.05)


def test_Lz_clip_and_aggregated_bad():
    r, gid, bid = make_group([4, 2], [1, 1, 1, 1])  # L_z = 1/4
    st = sh.g2rpo_stats(r, gid, bid, config=sh.G2RPOConfig(Lz_min=0.5))
    assert_close(st.L_z, 0.5)
    st = sh.g2rpo_stats(r, gid, None, config=sh.G2RPOConfig())
    assert_close(st.L_z, 1.0)  # unclustered bad rollouts: one aggregated bad mode


def test_floor_inverse_G_and_verifier_schedule():
    r, gid, bid = make_group([9, 1], [2])  # G = 12; ρ = 0.2 dominates the 1/G floor
    st = sh.g2rpo_stats(r, gid, bid, config=sh.G2RPOConfig(floor_inverse_G=True, rho=0.2))
    assert_close(st.y_hat[:2], np.array([0.9, 0.2]) / 1.1)
    v = Verifier(0.1, 0.05)
    st = sh.g2rpo_stats(r, gid, bid, config=sh.G2RPOConfig(kind="A", gain=2.0, verifier=v))
    p = 2 / 12
    q = 0.9 - 0.85 * p
    assert_close(st.gain, 2.0 * 0.85 * p / math.sqrt(q * (1 - q)))  # eq. (62)


def test_ragged_mask_and_vmap():
    r1, g1, b1 = make_group([3, 2], [2])
    r2, g2, b2 = make_group([1, 1], [3, 1])
    G = 8
    pad = lambda a, v: np.concatenate([a, np.full(G - len(a), v, a.dtype)])  # noqa: E731
    R = np.stack([pad(r1, 0.0), pad(r2, 0.0)])
    Gid = np.stack([pad(g1, -1), pad(g2, -1)])
    Bid = np.stack([pad(b1, -1), pad(b2, -1)])
    M = np.stack([np.arange(G) < len(r1), np.arange(G) < len(r2)])
    cfg = sh.G2RPOConfig(kind="B", rho=0.1)
    out = sh.g2rpo_advantages(R, Gid, Bid, M, config=cfg)
    for i, (r, g, b) in enumerate([(r1, g1, b1), (r2, g2, b2)]):
        assert_close(out[i, :len(r)], sh.g2rpo_advantages(r, g, b, config=cfg, num_clusters=G))
        assert_close(out[i, len(r):], 0.0)
    vm = jax.vmap(lambda r, g, b, m: sh.g2rpo_advantages(r, g, b, m, config=cfg))(R, Gid, Bid, M)
    assert_close(vm, out)
    pipe = sh.g2rpo(cfg)
    assert_close(jax.jit(lambda *a: pipe(a[0], a[3], good_cluster=a[1], bad_cluster=a[2]))(
        R, Gid, Bid, M), out)


def test_bad_input():
    r, gid, bid = make_group([3, 2], [2])
    with pytest.raises(ValueError, match=r"declared set \{0, 1\}"):
        sh.g2rpo_bonus(r * 2.0, gid)
    wrong = gid.copy()
    wrong[-1] = 0
    with pytest.raises(ValueError, match="must be -1 for incorrect"):
        sh.g2rpo_bonus(r, wrong)
    with pytest.raises(ValueError, match="must lie in"):
        sh.g2rpo_bonus(r, np.where(gid >= 0, 99, -1))
    with pytest.raises(ValueError, match="must be -1 for correct"):
        sh.g2rpo_bonus(r, gid, np.zeros_like(bid))
    with pytest.raises(ValueError, match="shape"):
        sh.g2rpo_bonus(r, gid[:-1])
    with pytest.raises(ValueError, match="G must be >= 2"):
        sh.g2rpo_bonus(np.ones(1), np.zeros(1, int))
    with pytest.raises(ValueError, match="integers"):
        sh.g2rpo_bonus(r, gid.astype(float))
    for bad_cfg in [dict(kind="C"), dict(rho=1.0), dict(B_max=0.0), dict(Lz_min=-1.0),
                    dict(p_damp=2.0)]:
        with pytest.raises(ValueError):
            sh.G2RPOConfig(**bad_cfg)
    with pytest.raises(Exception, match="must be -1 for incorrect"):
        jax.block_until_ready(  # raised where the result is waited for (asynchronous backends)
            jax.jit(lambda r, g: sh.g2rpo_bonus(r, g))(jnp.asarray(r), jnp.asarray(wrong)))


# -- the correct-scored cells' sums: by their subsets and by the dynamic programme ---------------
@pytest.mark.parametrize("n1,S", [(1, 6), (2, 16), (3, 8), (6, 64), (7, 24)])
def test_the_cells_sums_by_subsets_equal_the_dynamic_programme(n1, S):
    """G²RPO's sums over the correct-scored cells (F0, F1 and every own cell's) in closed form
    over the cells' subsets equal the programme over the cells with its reverse pass (two
    algorithms, the second independent of the first's generating functions), to round-off:
    common, tiny (1e-9, 1e-13) and absent (0) rates, each own cell to relative round-off (a
    tiny cell's own sum is as small as its rate: the subsets keep its digits), and their
    forward-mode derivatives in the rates (what the linear-noise covariance takes)."""
    from simplexlab.shaping._g2rpo import _good_by_dp, _good_by_subsets

    rng = np.random.default_rng(n1 * 100 + S)
    common = S * rng.dirichlet(np.ones(n1 + 2))[:n1]
    draws = [common]
    if n1 >= 3:
        tiny, zero = common.copy(), common.copy()
        tiny[1], tiny[2] = 1e-9, 1e-13
        zero[0] = 0.0
        draws += [tiny, zero]
    rates = jnp.asarray(np.stack(draws))
    cots = tuple(jnp.asarray(rng.normal(size=(len(draws), 2, S + 1, n1 + 1))).at[..., 0].set(0.0)
                 for _ in range(2))
    tangent = jnp.asarray(rng.normal(size=n1))

    def both(fn):
        def one(lam, cot):
            return fn(lam, S, n1, cot)

        values = jax.vmap(one)(rates, cots)
        # forward mode in the rates (through the weights for the programme), the common draw
        slopes = jax.jvp(lambda r: one(r, jax.tree.map(lambda c: c[0], cots)), (rates[0],),
                         (tangent,))[1]
        return values, slopes

    (sub, dsub), (dp, ddp) = jax.jit(lambda: (both(_good_by_subsets), both(_good_by_dp)))()
    # each draw on its own scale (rows of the values), the slopes on theirs
    pairs = [(f"{name} of draw {i}", x[i], y[i]) for name, x, y in zip(
        ("F0", "F1", "own"), sub, dp, strict=True) for i in range(len(draws))]
    pairs += list(zip(("dF0", "dF1", "d own"), dsub, ddp, strict=True))
    for name, x, y in pairs:
        x, y = np.asarray(x), np.asarray(y)
        assert np.all(np.isfinite(x)), name
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-11 * np.max(np.abs(y)), err_msg=name)
    live = np.stack(draws) > 0
    np.testing.assert_allclose(np.asarray(sub[2])[live], np.asarray(dp[2])[live], rtol=1e-9,
                               atol=0, err_msg="own, relative")


def test_the_cells_sums_take_the_subsets_where_they_cost_less():
    """The choice between the two algorithms: the subsets at the lab's settings (K = 6 at every
    G the bandit trains with), the programme where 2^N outgrows G² (many correct modes)."""
    from simplexlab.shaping._g2rpo import _good_by_subsets_cost

    for S in (4, 8, 16, 64, 256):
        subsets, programme = _good_by_subsets_cost(S, 6)
        assert subsets <= programme, S
    subsets, programme = _good_by_subsets_cost(16, 12)
    assert subsets > programme
