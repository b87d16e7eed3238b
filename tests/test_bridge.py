"""The torch ↔ JAX bridge (simplexlab.llm): zero-copy round trips, the dtype / device /
layout rules, and the bridge's advantages and group statistics against the one JAX
implementation (simplexlab.shaping) on the same inputs."""

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from helpers import assert_close  # noqa: E402

from simplexlab import llm, shaping  # noqa: E402
from simplexlab.llm import _bridge  # noqa: E402
from simplexlab.theory import Verifier  # noqa: E402

SUPPORTED = [torch.float32, torch.float64, torch.int32, torch.int64, torch.bool]


def _tensor(dtype, shape=(3, 5)):
    t = torch.arange(int(np.prod(shape))).reshape(shape) % 2 if dtype == torch.bool else \
        torch.arange(int(np.prod(shape))).reshape(shape) * 3 - 7
    return t.to(dtype)


def _mutate(t):
    t[0, 0] = (not t[0, 0].item()) if t.dtype == torch.bool else t[0, 0] + 11


# ---- zero-copy exchange -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SUPPORTED, ids=str)
def test_torch_to_jax_round_trip_is_exact_and_zero_copy(dtype):
    t = _tensor(dtype)
    a = llm.to_jax(t)
    assert a.dtype == jnp.dtype(str(dtype).removeprefix("torch.")) and a.shape == (3, 5)
    assert a.unsafe_buffer_pointer() == t.data_ptr()
    np.testing.assert_array_equal(np.asarray(a), t.numpy())
    _mutate(t)  # a write through torch is seen by JAX (same memory)
    np.testing.assert_array_equal(np.asarray(a), t.numpy())
    back = llm.to_torch(a)
    assert back.dtype == dtype and back.data_ptr() == t.data_ptr()
    assert torch.equal(back, t)


@pytest.mark.parametrize("dtype", SUPPORTED, ids=str)
def test_jax_to_torch_round_trip_is_exact_and_zero_copy(dtype):
    # a CPU array on every backend (to_torch of a GPU array is a CUDA tensor, tested nowhere here)
    a = jax.device_put(_tensor(dtype).numpy(), jax.devices("cpu")[0])
    t = llm.to_torch(a)
    assert t.dtype == dtype and t.device.type == "cpu"
    assert t.data_ptr() == a.unsafe_buffer_pointer()
    np.testing.assert_array_equal(t.numpy(), np.asarray(a))
    _mutate(t)  # the tensor aliases the JAX buffer: the write is seen by JAX
    np.testing.assert_array_equal(np.asarray(a), t.numpy())
    again = llm.to_jax(t)
    assert again.unsafe_buffer_pointer() == a.unsafe_buffer_pointer()


def test_empty_and_scalar_tensors():
    for t in (torch.zeros(0, 4), torch.tensor(2.5)):
        a = llm.to_jax(t)
        assert a.shape == tuple(t.shape)
        assert torch.equal(llm.to_torch(a), t)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.float16, torch.bfloat16, torch.uint8,
                                   torch.int8, torch.int16], ids=str)
def test_unsupported_dtypes_are_named(dtype):
    with pytest.raises(ValueError, match=f"dtype {dtype}"):
        llm.to_jax(torch.zeros(4, dtype=dtype))
    with pytest.raises(ValueError, match="dtype"):
        llm.to_torch(jnp.zeros(4, jnp.dtype(str(dtype).removeprefix("torch."))))


def test_64_bit_types_need_jax_x64():
    with jax.enable_x64(False):
        for dtype in (torch.float64, torch.int64):
            with pytest.raises(ValueError, match=f"{dtype}.*64-bit mode is off"):
                llm.to_jax(torch.zeros(3, dtype=dtype))
        # the convenience API narrows int64 mode ids (exact) but refuses float64 rewards
        r = torch.tensor([[0.0, 1.0, 1.0, 0.0]])
        m = torch.tensor([[0, 1, 1, 2]])
        a = llm.advantages(r, m, method="g2rpo", num_clusters=3)
        assert a.dtype == torch.float32
        with pytest.raises(ValueError, match="float64.*64-bit mode is off"):
            llm.advantages(r.double(), m, method="g2rpo", num_clusters=3)


def test_refused_devices_layouts_and_grad():
    with pytest.raises(ValueError, match="'meta' device"):
        llm.to_jax(torch.empty(3, device="meta"))
    with pytest.raises(ValueError, match="requires grad.*detach"):
        llm.to_jax(torch.ones(3, requires_grad=True))
    t = torch.arange(12.0).reshape(3, 4)
    for view in (t.T, t[:, ::2], torch.ones(1, 4).expand(3, 4)):
        with pytest.raises(ValueError, match="not contiguous"):
            llm.to_jax(view)
    with pytest.raises(ValueError, match="cannot be aliased|copied"):
        llm.to_jax(torch.arange(64.0)[1:17])  # 4-byte offset: misaligned for JAX
    with pytest.raises(ValueError, match="layout"):
        llm.to_jax(torch.eye(3).to_sparse())
    with pytest.raises(ValueError, match="torch.Tensor"):
        llm.to_jax(np.zeros(3))
    if not _bridge._jax_has_gpu():  # a CUDA tensor with a CPU-only JAX
        assert "no GPU backend" in _bridge._device_error("x", torch.device("cuda:0"))


def test_to_torch_refusals():
    with pytest.raises(ValueError, match="jax.Array"):
        llm.to_torch(np.zeros(3))
    with pytest.raises(ValueError, match="traced"):
        jax.jit(llm.to_torch)(jnp.zeros(3))
    a = jnp.zeros(3)
    a.delete()
    with pytest.raises(ValueError, match="deleted"):
        llm.to_torch(a)


# ---- advantages against simplexlab.shaping ----------------------------------------------------

P, G, C = 8, 6, 4


def _groups(seed=0):
    """Random groups plus all-correct, all-wrong and single-mode rows; a mask with >= 2 valid
    rollouts per group (one all-valid row included); log-probabilities < 0."""
    rng = np.random.default_rng(seed)
    r = (rng.random((P, G)) < 0.5).astype(np.float64)
    m = rng.integers(0, C, (P, G))
    r[1], r[2] = 1.0, 0.0  # all correct, all wrong
    m[3] = 2  # a single mode
    r[3, :2] = [0.0, 1.0]
    mask = rng.random((P, G)) < 0.8
    mask[:, :2] = True
    mask[0] = True
    logp = -rng.gamma(2.0, 1.0, (P, G))
    return r, m, mask, logp


def _torch(*arrays):
    return [None if a is None else torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]


def _reference(method, r, m, mask, logp, **kw):
    return np.asarray(shaping.advantages(method, shaping.Groups(r, m, mask, logp), **kw))


@pytest.mark.parametrize("method", sorted(shaping.METHODS))
def test_advantages_equal_shaping_for_every_method(method):
    r, m, mask, logp = _groups()
    ref = _reference(method, r, m, mask, logp, num_clusters=C)
    tr, tm, tk, tl = _torch(r, m, mask, logp)
    out = llm.advantages(tr, tm, method=method, mask=tk, logp=tl, num_clusters=C)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    assert_close(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    assert_close(out.numpy()[~mask], 0.0)


def test_advantages_without_mask_float32_and_int_inputs():
    r, m, _, logp = _groups(1)
    r32 = r.astype(np.float32)
    ref = _reference("g2rpo", r32, m.astype(np.int32), None, None, num_clusters=C)
    out = llm.advantages(torch.from_numpy(r32), torch.from_numpy(m.astype(np.int32)),
                         method="g2rpo", num_clusters=C)
    assert out.dtype == torch.float32
    assert_close(out.numpy(), ref, rtol=1e-6, atol=1e-6)
    # bool rewards (torch's default float dtype), real-valued rewards for GRPO, logp needing grad
    out = llm.advantages(torch.from_numpy(r32 > 0), method="grpo")
    assert out.dtype == torch.get_default_dtype()
    assert_close(out.numpy(), _reference("grpo", r32, None, None, None), rtol=1e-6, atol=1e-6)
    real = np.random.default_rng(2).normal(size=(P, G))
    assert_close(llm.advantages(torch.from_numpy(real), method="rloo").numpy(),
                 _reference("rloo", real, None, None, None), rtol=1e-10, atol=1e-12)
    lp = torch.from_numpy(logp).requires_grad_(True)
    out = llm.advantages(torch.from_numpy(r), method="progrpo", logp=lp)
    assert not out.requires_grad
    assert_close(out.numpy(), _reference("progrpo", r, None, None, logp), rtol=1e-10,
                 atol=1e-12)


def test_non_contiguous_and_misaligned_inputs_are_copied():
    r, m, mask, _ = _groups(3)
    tr, tm, tk = _torch(r, m, mask)
    ref = llm.advantages(tr, tm, method="g2rpo", mask=tk, num_clusters=C)
    wide = torch.zeros(P, 2 * G, dtype=torch.float64)
    wide[:, ::2] = tr  # a strided view
    off = torch.zeros(P * G + 1, dtype=torch.int64)
    off[1:] = tm.reshape(-1)  # an offset (misaligned) view
    out = llm.advantages(wide[:, ::2], off[1:].reshape(P, G), method="g2rpo", mask=tk,
                         num_clusters=C)
    assert torch.equal(out, ref)


SCHEDULES = [
    (shaping.GainSchedule(kind="A", gain=1.2, ramp_steps=10), 3, (0.1, 0.05), None),
    (shaping.GainSchedule(kind="B", gain=2.0, cluster_bad=False, B_max=2.0, p_damp=0.2,
                          p_min=0.1), 0, (0.2, 0.0), None),
    (shaping.GainSchedule(kind="constant", rho=0.05, floor_inverse_G=True, Lz_min=0.1), 7,
     (0.0, 0.0), {"gain": 0.7}),
]


@pytest.mark.parametrize("schedule,step,rates,params", SCHEDULES, ids=["A-ramp-noisy",
                                                                      "B-clipped", "const"])
def test_g2rpo_schedules_warm_up_and_noisy_verifier(schedule, step, rates, params):
    r, m, mask, _ = _groups(4)
    tr, tm, tk = _torch(r, m, mask)
    for s in (step, step + 20):  # inside and after the warm-up
        ref = _reference("g2rpo", r, m, mask, None, num_clusters=C, schedule=schedule, step=s,
                         verifier=Verifier(*rates), params=params)
        out = llm.advantages(tr, tm, method="g2rpo", mask=tk, num_clusters=C, params=params,
                             schedule=schedule.to_dict() if s > step else schedule, step=s,
                             delta_fn=rates[0], delta_fp=rates[1])
        assert_close(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    # the step is a run-time argument: a warm-up compiles one program
    key = _bridge._schedule_key(schedule)
    program = _bridge._advantages_program("g2rpo", C, key, tuple(sorted((params or {}).items())),
                                          rates, True)
    assert program._cache_size() == 1


def test_group_stats_equal_g2rpo_stats_and_rebuild_the_advantages():
    r, m, mask, _ = _groups(5)
    tr, tm, tk = _torch(r, m, mask)
    sched = shaping.GainSchedule(kind="A", ramp_steps=4, B_max=3.0)
    verifier = Verifier(0.1, 0.1)
    stats = llm.group_stats(tr, tm, mask=tk, num_clusters=C, schedule=sched, step=2,
                            delta_fn=0.1, delta_fp=0.1, mode_threshold=0.3)
    assert tuple(stats) == llm.STATS
    good = np.where(mask & (r == 1), m, -1)
    bad = np.where(mask & (r == 0), m, -1)
    ref = shaping.g2rpo_stats(r, good, bad, mask, config=sched.config(2, verifier),
                              num_clusters=C)
    for k, v in ref._asdict().items():
        assert_close(stats[k].numpy(), v, rtol=1e-10, atol=1e-12, err_msg=k)
    assert_close(stats["K_above"].numpy(), np.sum(np.asarray(ref.y_hat) > 0.3, -1))
    # Â = z-score + bonus (G² Alg. 1 line 12), the bonus read off the statistics
    gb = stats["good_bonus"].numpy()
    bonus = np.where(mask & (r == 1), np.take_along_axis(gb, np.maximum(m, 0), -1),
                     np.where(mask & (r == 0), stats["bad_bonus"].numpy()[:, None], 0.0))
    adv = llm.advantages(tr, tm, method="g2rpo", mask=tk, num_clusters=C, schedule=sched, step=2,
                         delta_fn=0.1, delta_fp=0.1)
    z = np.asarray(shaping.grpo_advantages(r, mask, eps=sched.eps))
    assert_close(adv.numpy(), z + bonus, rtol=1e-10, atol=1e-12)


# ---- validation at the boundary ---------------------------------------------------------------

@pytest.mark.parametrize("method", sorted(shaping.METHODS))
def test_non_binary_rewards_are_refused_exactly_where_shaping_refuses(method):
    r, m, mask, logp = _groups()
    r = r.copy()
    r[4, 1] = 0.5
    try:
        _reference(method, r, m, mask, logp, num_clusters=C)
        refused = False
    except ValueError:
        refused = True
    tr, tm, tk, tl = _torch(r, m, mask, logp)
    if refused:
        with pytest.raises(ValueError, match=r"\{0, 1\}.*0\.5 at \[4, 1\]"):
            llm.advantages(tr, tm, method=method, mask=tk, logp=tl, num_clusters=C)
    else:
        llm.advantages(tr, tm, method=method, mask=tk, logp=tl, num_clusters=C)


def test_bad_values_are_named():
    r, m, mask, logp = _groups()
    tr, tm, tk, tl = _torch(r, m, mask, logp)

    def call(method="g2rpo", **kw):
        args = {"rewards": tr, "modes": tm, "mask": tk, "num_clusters": C, **kw}
        return llm.advantages(args.pop("rewards"), args.pop("modes"), method=method, **args)

    with pytest.raises(ValueError, match="unknown method 'ppo'"):
        call("ppo")
    bad = tm.clone()
    bad[2, 0] = C
    with pytest.raises(ValueError, match=rf"mode ids must lie in \[0, num_clusters = {C}\); got "
                                         rf"{C} at \[2, 0\]"):
        call(modes=bad)
    nan = tr.clone()
    nan[0, 1] = float("nan")
    with pytest.raises(ValueError, match=r"rewards must be finite; got nan at \[0, 1\]"):
        call("grpo", rewards=nan)
    one = tk.clone()
    one[5, 1:] = False
    with pytest.raises(ValueError, match="at least 2 valid.*group 5 has 1"):
        call(mask=one)
    pos = tl.clone()
    pos[0, 0] = 0.5
    with pytest.raises(ValueError, match=r"logp must be <= 0.*0\.5 at \[0, 0\]"):
        call("progrpo", logp=pos)
    with pytest.raises(ValueError, match="needs the rollouts' log-probabilities"):
        call("progrpo")
    with pytest.raises(ValueError, match="Focal.gamma"):
        call("f_grpo", params={"focal_gamma": -1.0})
    with pytest.raises(ValueError, match="unknown method parameter"):
        call(params={"temperature": 1.0})
    with pytest.raises(ValueError, match="Verifier.delta_fn"):
        call(delta_fn=1.5)
    with pytest.raises(ValueError, match="GainSchedule: unknown field"):
        call(schedule={"kind": "B", "lam": 1.0})
    with pytest.raises(ValueError, match="step must be an integer >= 0"):
        call(step=-1)
    with pytest.raises(ValueError, match=r"modes must have the shape of rewards \(8, 6\)"):
        call(modes=tm[:, :3])
    with pytest.raises(ValueError, match="group size G must be >= 2"):
        llm.advantages(tr[:, :1], method="grpo")
    with pytest.raises(ValueError, match=r"shape \(P, G\)"):
        llm.advantages(tr[0], method="grpo")
    with pytest.raises(ValueError, match="modes must be int32 or int64"):
        call(modes=tm.double())
    with pytest.raises(ValueError, match="rewards have dtype torch.float16"):
        call("grpo", rewards=tr.half())
    with pytest.raises(ValueError, match="modes .* are needed"):
        llm.advantages(tr, method="g2rpo")
    with pytest.raises(ValueError, match="'meta' device"):
        llm.advantages(torch.empty(P, G, device="meta"), method="grpo")
    with pytest.raises(ValueError, match="mode_threshold"):
        llm.group_stats(tr, tm, mode_threshold=1.0)
    # validate=False skips the value checks (no host sync) but not the structural ones
    llm.advantages(tr, bad, method="g2rpo", mask=tk, num_clusters=C, validate=False)


# ---- import hygiene ---------------------------------------------------------------------------

def test_simplexlab_never_imports_torch():
    code = ("import sys, simplexlab; import simplexlab.sim, simplexlab.sweep, simplexlab.lab; "
            "bad = [m for m in ('torch', 'simplexlab.llm') if m in sys.modules]; "
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
