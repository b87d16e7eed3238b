r"""The torch ↔ JAX bridge: zero-copy DLPack exchange, and the package's advantage rules
called from a torch training loop.

:func:`to_jax` and :func:`to_torch` exchange buffers through DLPack (``jax.dlpack.from_dlpack``,
``torch.from_dlpack``) without copying: the result *aliases* the argument's memory.
:func:`advantages` and :func:`group_stats` take a torch training loop's ``(P, G)`` groups, hand
them to the one JAX implementation (:func:`simplexlab.shaping.advantages`,
:func:`simplexlab.shaping.g2rpo_stats`) under a cached ``jax.jit``, and return torch tensors. No
formula is re-implemented in torch.

Rules of :func:`to_jax` / :func:`to_torch` (each violation is a ``ValueError`` naming the dtype,
device or property; nothing is converted silently):

* **dtypes**: ``float32``, ``int32`` and ``bool`` always; ``float64`` and ``int64`` only when JAX's
  64-bit mode is on (``jax.config.update("jax_enable_x64", True)``). Without it JAX would *copy and
  narrow* a 64-bit tensor to 32 bits behind the caller's back (even with ``copy=False``), so the
  bridge refuses it; convert explicitly (``t.float()``, ``t.int()``). ``bool`` travels as DLPack's
  ``kDLBool`` (one byte per element) and is zero-copy both ways. Every other dtype (``float16``,
  ``bfloat16``, ``complex64``, ``uint8``, ``int8``, ``int16``, ...) is refused: DLPack could carry
  most of them, but the package's rules are validated in float32/float64 only.
* **devices**: a CPU tensor becomes an array on JAX's CPU backend and back. A CUDA tensor needs a
  JAX GPU backend (``jax[cuda]``): with a CPU-only JAX it is refused, naming the device; a JAX GPU
  array needs a CUDA build of torch. ``meta`` tensors (no data), other torch devices (``mps``,
  ``xpu``, ...), sparse layouts and JAX arrays sharded over several devices are refused. (The GPU
  path relies on DLPack's stream handshake, done by both libraries; it is untested here.)
* **gradients**: a tensor that requires grad is refused (call ``.detach()``): JAX takes no part in
  torch's autograd. :func:`advantages` detaches ``logp`` itself -- advantages are constants of the
  policy-gradient loss, as in every GRPO implementation.
* **layout**: only C-contiguous tensors (``t.is_contiguous()``) whose data pointer JAX can alias
  (64-byte aligned on CPU; an offset view such as ``t[1:]`` usually is not) are accepted: a
  transposed, strided, broadcast (``expand``) or misaligned view is refused rather than copied,
  so that "zero-copy" always holds; ``t.contiguous()`` or ``t.clone()`` makes a fresh, aligned
  copy. :func:`advantages` and :func:`group_stats` make that copy themselves (a few KiB).
* **aliasing**: the result shares memory with the argument. A write to the torch tensor is seen
  by the JAX array made from it and vice versa (JAX assumes its arrays immutable, so write only
  to buffers no JAX computation is still reading). Keep the source alive as long as you like: the
  DLPack capsule keeps the buffer alive for the other side.
* **donation**: never donate (``jax.jit(..., donate_argnums=...)``) an array that torch still
  holds -- one made by :func:`to_jax`, or one passed to :func:`to_torch`. XLA could then write the
  output into torch's memory. (JAX 0.10 on CPU happens to refuse to reuse such buffers -- an
  imported array is merely invalidated, an exported one is kept -- but that is not a documented
  guarantee.) The bridge's own programs donate nothing; the arrays they return are fresh, so the
  tensors :func:`advantages` returns are owned by torch alone.

:func:`advantages` and :func:`group_stats` accept what a training loop has at hand and convert it
(with copies of a few KiB where a zero-copy view is impossible): bool or integer rewards become
torch's default float dtype; ``int64`` mode ids become ``int32`` when JAX's 64-bit mode is off
(ids are validated to lie in ``[0, num_clusters)``, so this is exact); ``logp`` of any floating
dtype (``bfloat16`` included) is detached and cast to the rewards' dtype; an integer 0/1 ``mask``
becomes bool. float64 rewards or ``logp`` with JAX's 64-bit mode off are refused (narrowing them
would change the numbers). The result has the rewards' float dtype and device.

Values (finite rewards, {0, 1} rewards for the rules that require them, mode ids in
``[0, num_clusters)``, >= 2 valid rollouts per group, ``logp`` finite and <= 0) are checked inside
the compiled program, next to the rule, and read back as one flag vector; a violation raises a
``ValueError`` naming the first offending entry (``validate=False`` skips them).

Compilation: one program per (method, ``num_clusters``, gain schedule, method parameters, verifier
rates, input shapes and dtypes, which of ``mask`` / ``logp`` are given); the hyper-parameters are
compile-time constants (a new value compiles a new program, ~1 s), while the training ``step`` is
a run-time argument, so a gain warm-up (``GainSchedule.ramp_steps``) never recompiles.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.dlpack
import jax.numpy as jnp
import numpy as np
import torch

from .. import shaping
from .._checks import as_int, trusted_inputs, xp
from ..theory import Verifier

__all__ = ["DTYPES", "STATS", "advantages", "group_stats", "to_jax", "to_torch"]

DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64, torch.bool)
"""Torch dtypes the bridge exchanges (float64 / int64 only with JAX's 64-bit mode on)."""
_WIDE = (torch.float64, torch.int64)
_JAX_NAMES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32,
              "int64": torch.int64, "bool": torch.bool}
_GPU_PLATFORMS = ("gpu", "cuda", "rocm")

STATS = ("p_hat", "y_hat", "K", "K_above", "L_y", "L_z", "gain", "good_bonus", "bad_bonus")
"""The keys of :func:`group_stats`' dict (G2 Alg. 1 lines 2–4, Listing 1 (a)–(f))."""

#: largest reward magnitude the group statistics take without overflow (as in
#: ``shaping.prepare_group``: 1e-3 sqrt(max), at most 1e100)
_REWARD_MAX = 1e100


def _x64() -> bool:
    return bool(jax.config.read("jax_enable_x64"))


@functools.cache
def _jax_has_gpu() -> bool:
    try:
        return len(jax.devices("gpu")) > 0
    except RuntimeError:
        return False


def _dtype_error(what: str, dtype) -> str | None:
    if dtype not in DTYPES:
        return (f"{what} has dtype {dtype}, which the bridge does not exchange; supported: "
                f"float32, float64, int32, int64, bool (convert explicitly, e.g. .float())")
    if dtype in _WIDE and not _x64():
        return (f"{what} has dtype {dtype}, but JAX's 64-bit mode is off, so JAX would copy it "
                f"and narrow it to 32 bits; enable it with "
                f"jax.config.update('jax_enable_x64', True) before using JAX, or convert "
                f"explicitly ({'.float()' if dtype == torch.float64 else '.int()'})")
    return None


def _device_error(what: str, device: torch.device) -> str | None:
    if device.type == "cpu":
        return None
    if device.type == "cuda":
        if _jax_has_gpu():
            return None
        return (f"{what} is on device {device}, but JAX has no GPU backend (JAX devices: "
                f"{jax.devices()}); install jax[cuda] or move the tensor with .cpu()")
    if device.type == "meta":
        return f"{what} is on the 'meta' device: it has no data to exchange"
    return f"{what} is on device {device}; the bridge exchanges CPU and CUDA tensors only"


def _check_tensor(t, what: str, *, layout: bool = True) -> None:
    """Raise ``ValueError`` unless ``t`` can be aliased by JAX (module docstring)."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{what} must be a torch.Tensor; got {type(t).__name__}")
    if t.layout != torch.strided:
        raise ValueError(f"{what} has layout {t.layout}; only dense (strided) tensors can be "
                         f"exchanged (use .to_dense())")
    msg = _device_error(what, t.device) or _dtype_error(what, t.dtype)
    if msg:
        raise ValueError(msg)
    if t.requires_grad:
        raise ValueError(f"{what} requires grad; JAX takes no part in torch's autograd, so pass "
                         f"tensor.detach()")
    if layout and not t.is_contiguous():
        raise ValueError(f"{what} is not contiguous (shape {tuple(t.shape)}, strides "
                         f"{t.stride()}); JAX could not alias it without a copy: pass "
                         f"tensor.contiguous()")


def to_jax(tensor: torch.Tensor) -> jax.Array:
    """A JAX array aliasing ``tensor``'s memory (zero-copy, DLPack), on the matching JAX device.

    ``tensor``: a dense, contiguous CPU (or, with a JAX GPU backend, CUDA) tensor of a supported
    dtype (:data:`DTYPES`; float64/int64 with JAX's 64-bit mode on) that does not require grad.
    Anything else, or a buffer JAX cannot alias (misaligned), raises ``ValueError`` naming the
    dtype, device or property; nothing is copied silently. Do not donate the result to a jitted
    function while ``tensor`` is alive (module docstring).
    """
    _check_tensor(tensor, "tensor")
    try:
        out = jax.dlpack.from_dlpack(tensor, copy=False)
    except ValueError as e:  # e.g. "source data buffer is not aligned to 64 bytes"
        raise ValueError(f"tensor (data pointer {tensor.data_ptr():#x}) cannot be aliased by "
                         f"JAX without a copy: {e}; pass tensor.clone() (a fresh, aligned "
                         f"allocation)") from None
    if tensor.numel() and out.unsafe_buffer_pointer() != tensor.data_ptr():
        raise ValueError(f"JAX copied the tensor (data pointer {tensor.data_ptr():#x}) instead of "
                         f"aliasing it; pass tensor.clone() (a fresh, aligned allocation)")
    return out


def to_torch(array: jax.Array) -> torch.Tensor:
    """A torch tensor aliasing ``array``'s buffer (zero-copy, DLPack), on the matching device.

    ``array``: a concrete (not traced), single-device JAX array of a supported dtype
    (:data:`DTYPES`) on the CPU (or a GPU, with a CUDA build of torch). Anything else raises
    ``ValueError`` naming the dtype or device. Writing to the result changes ``array`` too;
    do not donate ``array`` to a jitted function afterwards (module docstring).
    """
    if isinstance(array, jax.core.Tracer):
        raise ValueError("to_torch needs a concrete JAX array, not a traced value (it cannot be "
                         "called inside jit, vmap or grad)")
    if not isinstance(array, jax.Array):
        raise ValueError(f"to_torch expects a jax.Array; got {type(array).__name__}")
    if array.is_deleted():
        raise ValueError("the JAX array has been deleted (donated to a jitted function?)")
    devices = array.devices()
    if len(devices) != 1:
        raise ValueError(f"the JAX array is sharded over {len(devices)} devices; DLPack exchanges "
                         f"single-device arrays (gather it first)")
    device = next(iter(devices))
    dtype = _JAX_NAMES.get(np.dtype(array.dtype).name)
    if dtype is None:
        raise ValueError(f"the JAX array has dtype {array.dtype}, which the bridge does not "
                         f"exchange; supported: float32, float64, int32, int64, bool")
    if device.platform in _GPU_PLATFORMS:
        if not torch.cuda.is_available():
            raise ValueError(f"the JAX array is on {device}, but this torch has no CUDA "
                             f"support; move it with jax.device_put(array, jax.devices('cpu')[0])")
    elif device.platform != "cpu":
        raise ValueError(f"the JAX array is on {device} (platform {device.platform!r}); the "
                         f"bridge exchanges CPU and GPU arrays only")
    return torch.from_dlpack(array)


# ---- advantages and group statistics ----------------------------------------------------------

def _aligned(t: torch.Tensor) -> torch.Tensor:
    """``t`` if JAX can alias it, else a fresh contiguous copy (a few KiB for a batch of groups).
    64 bytes: the CPU alignment JAX requires; CUDA allocations are aligned more coarsely."""
    if t.is_contiguous() and (t.data_ptr() % 64 == 0 or t.numel() == 0):
        return t
    return t.clone(memory_format=torch.contiguous_format)


def _inputs(rewards, modes, mask, logp, *, need_modes: bool):
    """Validate the groups' shapes, dtypes and devices; return torch tensors ready for
    :func:`to_jax` (converted where the module docstring says so)."""
    if not isinstance(rewards, torch.Tensor):
        raise ValueError(f"rewards must be a torch.Tensor of shape (P, G); got "
                         f"{type(rewards).__name__}")
    if rewards.ndim != 2:
        raise ValueError(f"rewards must have shape (P, G) (one row per prompt, one column per "
                         f"rollout); got shape {tuple(rewards.shape)}")
    P, G = rewards.shape
    if G < 2:
        raise ValueError(f"group size G must be >= 2 for a group-relative advantage; got G = {G} "
                         f"(rewards of shape {(P, G)})")
    device = rewards.device
    msg = _device_error("rewards", device)
    if msg:
        raise ValueError(msg)
    out = {}
    for name, t in (("rewards", rewards), ("modes", modes), ("mask", mask), ("logp", logp)):
        if t is None:
            if name == "modes" and need_modes:
                raise ValueError("modes (the mode/cluster id of every rollout) are needed by "
                                 "this method; got None")
            out[name] = None
            continue
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor; got {type(t).__name__}")
        if tuple(t.shape) != (P, G):
            raise ValueError(f"{name} must have the shape of rewards {(P, G)}; got "
                             f"{tuple(t.shape)}")
        if t.device != device:
            raise ValueError(f"{name} is on {t.device} but rewards are on {device}; put every "
                             f"input on one device")
        if t.layout != torch.strided:
            raise ValueError(f"{name} has layout {t.layout}; pass a dense tensor")
        out[name] = t.detach()
    r = out["rewards"]
    if r.dtype == torch.bool or not (r.is_floating_point() or r.is_complex()):
        r = r.to(torch.get_default_dtype())
    if r.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"rewards have dtype {r.dtype}; pass float32 or float64 rewards "
                         f"(or bool / integer ones, converted to torch's default float dtype)")
    msg = _dtype_error("rewards", r.dtype)
    if msg:
        raise ValueError(msg)
    out["rewards"] = r
    m = out["modes"]
    if m is not None:
        if m.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"modes must be int32 or int64 mode ids; got dtype {m.dtype}")
        # int64 ids: exchanged as they are with JAX's 64-bit mode, else narrowed to int32
        # (exact once validated to lie in [0, num_clusters))
        out["modes"] = m if (m.dtype == torch.int32 or _x64()) else m.to(torch.int32)
    k = out["mask"]
    if k is not None and k.dtype != torch.bool:
        if k.is_floating_point() or k.is_complex() or k.dtype not in (
                torch.int32, torch.int64, torch.int8, torch.int16, torch.uint8):
            raise ValueError(f"mask must be bool (or integer 0/1): True = the rollout exists; "
                             f"got dtype {k.dtype}")
        bad = ((k != 0) & (k != 1)).any().item()
        if bad:
            raise ValueError(f"mask must be bool (or integer 0/1); got values outside {{0, 1}}: "
                             f"{k[(k != 0) & (k != 1)][:5].tolist()}")
        out["mask"] = k != 0
    lp = out["logp"]
    if lp is not None:
        if not lp.is_floating_point():
            raise ValueError(f"logp must hold floating log-probabilities; got dtype {lp.dtype}")
        out["logp"] = lp.to(r.dtype)
    return {k: (None if v is None else _aligned(v)) for k, v in out.items()}


def _value_checks(r, m, valid, lp, method: str, num_clusters: int) -> list:
    """The value checks the package makes at run time (``shaping.prepare_group``, the {0, 1}
    rewards of G²RPO / F-GRPO / IAC, cluster ids, ProGRPO's log-probabilities), as
    ``[(bad, message(index))]``. Written once for NumPy arrays (to name the first offending entry)
    and for the JAX arrays of the compiled program (one flag per check, fused with the rule; the
    rule itself then runs under :func:`simplexlab._checks.trusted_inputs`)."""
    bound = min(_REWARD_MAX, math.sqrt(float(np.finfo(r.dtype).max)) * 1e-3)

    def at(a, i):
        return f"{a[i].item()!r} at {list(i)}"

    checks = [
        (valid.sum(-1) < 2, lambda i: f"every group needs at least 2 valid (unmasked) rollouts; "
                                      f"group {i[0]} has {int(valid[i].sum())}"),
        (valid & ~xp.isfinite(r), lambda i: f"rewards must be finite; got {at(r, i)}"),
        (valid & (abs(r) > bound), lambda i: f"rewards must have magnitude <= {bound:g} (the "
                                             f"group statistics of larger rewards overflow "
                                             f"{r.dtype}); got {at(r, i)}"),
    ]
    if shaping.METHODS[method].binary:  # the package raises on anything else
        checks.append((valid & (r != 0) & (r != 1),
                       lambda i: f"method {method!r} needs rewards in {{0, 1}} (verifier "
                                 f"outcomes); got {at(r, i)}"))
    if m is not None:
        checks.append((valid & ((m < 0) | (m >= num_clusters)),
                       lambda i: f"mode ids must lie in [0, num_clusters = {num_clusters}); got "
                                 f"{at(m, i)}"))
    if lp is not None:
        checks.append((valid & ~xp.isfinite(lp), lambda i: f"logp must be finite; got "
                                                           f"{at(lp, i)}"))
        checks.append((valid & (lp > 0), lambda i: f"logp must be <= 0 (log-probabilities); got "
                                                   f"{at(lp, i)}"))
    return checks


def _flags(rewards, modes, mask, logp, method: str, num_clusters: int):
    """Inside a program: one bool per :func:`_value_checks` check, ``True`` = violated."""
    valid = jnp.ones(rewards.shape, bool) if mask is None else mask
    return jnp.stack([jnp.any(bad) for bad, _ in
                      _value_checks(rewards, modes, valid, logp, method, num_clusters)])


def _raise_invalid(x: dict, method: str, num_clusters: int) -> None:
    """After a program flagged its inputs: name the first offending entry (NumPy, on the host)."""
    a = {k: None if v is None else v.cpu().numpy() for k, v in x.items()}
    valid = np.ones(a["rewards"].shape, bool) if a["mask"] is None else a["mask"]
    with np.errstate(invalid="ignore", over="ignore"):
        for bad, message in _value_checks(a["rewards"], a["modes"], valid, a["logp"], method,
                                          num_clusters):
            bad = np.asarray(bad)
            if bad.any():
                raise ValueError(message(tuple(int(j) for j in np.argwhere(bad)[0])))
    raise ValueError("the inputs failed a value check")  # pragma: no cover - flags agree


#: ``id(schedule) -> (schedule, key)``: GainSchedules are immutable, so their keys are cached
_SCHEDULE_KEYS: dict[int, tuple] = {}


def _schedule_key(schedule) -> tuple:
    """A hashable key of a gain schedule (``GainSchedule`` or its ``to_dict`` mapping)."""
    hit = _SCHEDULE_KEYS.get(id(schedule))
    if hit is not None and hit[0] is schedule:
        return hit[1]
    obj = schedule
    if schedule is None:
        schedule = shaping.GainSchedule()
    elif isinstance(schedule, Mapping):
        schedule = shaping.GainSchedule.from_dict(dict(schedule))
    elif not isinstance(schedule, shaping.GainSchedule):
        raise ValueError(f"schedule must be a GainSchedule (or its to_dict() mapping); got "
                         f"{schedule!r}")
    try:
        key = tuple(schedule.to_dict().items())
    except (TypeError, jax.errors.ConcretizationTypeError):
        raise ValueError(f"the bridge needs a concrete gain; got {schedule.gain!r}") from None
    if isinstance(obj, shaping.GainSchedule) or obj is None:
        if len(_SCHEDULE_KEYS) >= 64:
            _SCHEDULE_KEYS.clear()
        _SCHEDULE_KEYS[id(obj)] = (obj, key)
    return key


def _real(v, name: str) -> float:
    if isinstance(v, torch.Tensor):
        v = v.item() if v.numel() == 1 else v
    if isinstance(v, bool) or not (isinstance(v, int | float | np.integer | np.floating) or
                                   (isinstance(v, np.ndarray | jax.Array) and np.ndim(v) == 0
                                    and np.asarray(v).dtype.kind in "iuf")):
        raise ValueError(f"{name} must be a real number; got {v!r}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite; got {v!r}")
    return v


def _rates(delta_fn, delta_fp) -> tuple[float, float]:
    """The verifier's error rates, real, finite and a :class:`Verifier`'s (in [0, 1), sum < 1),
    whichever method reads them."""
    rates = (_real(delta_fn, "delta_fn"), _real(delta_fp, "delta_fp"))
    Verifier(*rates)  # raises ValueError naming a rate out of range
    return rates


def _params_key(method: str, params) -> tuple:
    if params is None:
        return ()
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a mapping of method parameters; got {params!r}")
    unknown = sorted(set(params) - set(shaping.METHOD_PARAMS))
    if unknown:
        raise ValueError(f"unknown method parameter(s) {unknown}; known: "
                         f"{sorted(shaping.METHOD_PARAMS)}")
    used = shaping.METHODS[method].params  # parameters the method does not use change nothing
    return tuple(sorted((k, _real(v, f"params[{k!r}]")) for k, v in params.items() if k in used))


def _step(step) -> int:
    if isinstance(step, torch.Tensor):
        if step.numel() != 1 or step.is_floating_point() or step.dtype == torch.bool:
            raise ValueError(f"step must be an integer >= 0; got {step!r}")
        step = step.item()
    return as_int(step, "step", lower=0)


def _num_clusters(num_clusters, G: int) -> int:
    return G if num_clusters is None else as_int(num_clusters, "num_clusters", lower=1)


@functools.lru_cache(maxsize=64)
def _advantages_program(method, num_clusters, schedule, params, rates, validate):
    """The jitted rule for one static configuration (shapes and dtypes: jit's own cache);
    returns ``(advantages, flags)`` (``flags``: :func:`_flags`, ``None`` without ``validate``)."""
    sched = None if schedule is None else shaping.GainSchedule.from_dict(dict(schedule))
    verifier = None if rates is None else Verifier(*rates)
    kw = dict(params)

    def run(rewards, modes, mask, logp, step):
        flags = _flags(rewards, modes, mask, logp, method, num_clusters) if validate else None
        with trusted_inputs():  # the checks are the flags above
            adv = shaping.advantages(method, shaping.Groups(rewards, modes, mask, logp),
                                     params=kw, schedule=sched, step=step, verifier=verifier,
                                     num_clusters=num_clusters)
        return jnp.asarray(adv).astype(rewards.dtype), flags

    return jax.jit(run)


def advantages(rewards: torch.Tensor, modes: torch.Tensor | None = None, *, method: str = "grpo",
               mask: torch.Tensor | None = None, logp: torch.Tensor | None = None,
               params: Mapping[str, float] | None = None,
               schedule: shaping.GainSchedule | Mapping[str, Any] | None = None, step: int = 0,
               delta_fn: float = 0.0, delta_fp: float = 0.0, num_clusters: int | None = None,
               validate: bool = True) -> torch.Tensor:
    r"""Per-rollout advantages ``(P, G)`` of ``method`` for a torch training loop.

    The torch face of :func:`simplexlab.shaping.advantages` (same names, same rules, computed by
    that one JAX implementation under a cached ``jax.jit``; the inputs travel zero-copy):

    * ``rewards``: ``(P, G)`` verifier outcomes (float32/float64; bool or integer ones are
      converted to torch's default float dtype); in ``{0, 1}`` for ``g2rpo``, ``f_grpo``, ``iac``.
    * ``modes``: ``(P, G)`` int mode (cluster) id of every rollout in ``[0, num_clusters)``
      (``num_clusters`` defaults to ``G``); needed by ``g2rpo`` only (may be ``None`` otherwise).
    * ``mask``: ``(P, G)`` bool, ``True`` = the rollout exists (``None``: all); masked entries
      are ignored and get advantage 0; every group needs >= 2 valid rollouts.
    * ``logp``: ``(P, G)`` log-probability of every rollout (ProGRPO's confidence, PG eq. 4–6);
      detached and cast to the rewards' dtype.
    * ``method``: a name in :data:`simplexlab.shaping.METHODS`; ``params``: its parameters
      (:data:`simplexlab.shaping.METHOD_PARAMS` names).
    * G²RPO (G2 Alg. 1: correct rollouts clustered by mode among the good, incorrect ones among
      the bad when ``schedule.cluster_bad``; bonus eq. 44 + neutralizer eq. 53 added to the GRPO
      z-score, line 12): ``schedule`` (a :class:`~simplexlab.shaping.GainSchedule` or its
      ``to_dict()`` mapping; default ``GainSchedule()``, schedule B) at training step ``step``
      (its warm-up), with the verifier's ``J`` and ``σ`` (schedules A/B, eq. 62/67) from a
      :class:`Verifier` of rates ``delta_fn``, ``delta_fp``.
    * ``validate``: check the values (finite rewards of magnitude the statistics can take,
      ``{0, 1}`` where the rule requires it, mode ids in range, >= 2 valid rollouts per group,
      ``logp`` finite and <= 0) -- the checks the package makes itself -- and raise
      ``ValueError`` naming the first offending entry before anything is returned. The checks
      run in the same compiled program as the rule (a few µs) and come back as one flag vector
      (one host sync). ``False`` skips them (for inputs valid by construction): invalid values
      then give unspecified numbers.

    Returns a torch tensor of the rewards' float dtype on the rewards' device. Shapes, dtypes,
    devices, unknown methods or parameters raise ``ValueError`` (always checked).
    """
    m = shaping.lookup_method(method)
    if not isinstance(validate, bool):
        raise ValueError(f"validate must be True or False; got {validate!r}")
    x = _inputs(rewards, modes, mask, logp, need_modes=m.modes)
    if m.logp and x["logp"] is None:
        raise ValueError(f"method {method!r} needs the rollouts' log-probabilities (logp)")
    C = _num_clusters(num_clusters, x["rewards"].shape[-1])
    g2 = m.schedule
    rates = _rates(delta_fn, delta_fp)  # checked for every method, used by G²RPO's
    program = _advantages_program(
        method, C, _schedule_key(schedule) if g2 else None, _params_key(method, params),
        rates if g2 else None, validate)
    st = _step(step)
    jx = {k: (None if v is None else to_jax(v)) for k, v in x.items()}
    out, flags = program(jx["rewards"], jx["modes"], jx["mask"], jx["logp"], st)
    if flags is not None and np.asarray(flags).any():  # the one host sync
        _raise_invalid(x, method, C)
    return to_torch(out)


@functools.lru_cache(maxsize=64)
def _stats_program(num_clusters, schedule, rates, mode_threshold, validate):
    sched = shaping.GainSchedule.from_dict(dict(schedule))
    verifier = Verifier(*rates)

    def run(rewards, modes, mask, step):
        flags = _flags(rewards, modes, mask, None, "g2rpo", num_clusters) if validate else None
        with trusted_inputs():  # the checks are the flags above
            # the clusters of shaping.advantages("g2rpo") (G2 Alg. 1 lines 2–4)
            good, bad = shaping.g2rpo_clusters(shaping.Groups(rewards, modes, mask),
                                               sched.cluster_bad)
            st = shaping.g2rpo_stats(rewards, good, bad, mask, config=sched.config(step, verifier),
                                     num_clusters=num_clusters)
        out = {k: jnp.asarray(v).astype(rewards.dtype) for k, v in st._asdict().items()}
        # good modes holding more than mode_threshold of the good mass (the bandit's K̂)
        out["K_above"] = jnp.sum((st.y_hat > mode_threshold).astype(rewards.dtype), -1)
        return out, flags

    return jax.jit(run)


def group_stats(rewards: torch.Tensor, modes: torch.Tensor, *, mask: torch.Tensor | None = None,
                num_clusters: int | None = None,
                schedule: shaping.GainSchedule | Mapping[str, Any] | None = None, step: int = 0,
                delta_fn: float = 0.0, delta_fp: float = 0.0, mode_threshold: float = 0.05,
                validate: bool = True) -> dict[str, torch.Tensor]:
    r"""G²RPO's plug-in group statistics for logging, as torch tensors (G2 Alg. 1 lines 2–4,
    Listing 1 (a)–(f); :func:`simplexlab.shaping.g2rpo_stats` on the clusters
    :func:`advantages` uses for ``method="g2rpo"``).

    Arguments as in :func:`advantages` (rewards in ``{0, 1}``). Returns a dict (keys
    :data:`STATS`) of tensors of the rewards' dtype and device: ``p_hat`` ``(P,)`` the bad
    fraction ``|B|/G``; ``y_hat`` ``(P, C)`` the good-cluster masses (clipped, re-normalized;
    0 = unoccupied); ``K`` ``(P,)`` occupied good clusters; ``K_above`` ``(P,)`` good clusters with
    ``ŷ_j > mode_threshold``; ``L_y``, ``L_z`` ``(P,)`` (``L_z = 1`` for one aggregated bad arm);
    ``gain`` ``(P,)`` λ after the schedule (eq. 50/62/67, warm-up at ``step``); ``good_bonus``
    ``(P, C)`` the per-cluster bonus (eq. 44, re-centered, clipped); ``bad_bonus`` ``(P,)`` the
    neutralizer (eq. 53) every incorrect rollout gets.
    """
    if not isinstance(validate, bool):
        raise ValueError(f"validate must be True or False; got {validate!r}")
    x = _inputs(rewards, modes, mask, None, need_modes=True)
    C = _num_clusters(num_clusters, x["rewards"].shape[-1])
    t = _real(mode_threshold, "mode_threshold")
    if not 0.0 <= t < 1.0:
        raise ValueError(f"mode_threshold must lie in [0, 1); got {mode_threshold!r}")
    program = _stats_program(C, _schedule_key(schedule), _rates(delta_fn, delta_fp), t,
                             validate)
    st = _step(step)
    jx = {k: (None if v is None else to_jax(v)) for k, v in x.items()}
    out, flags = program(jx["rewards"], jx["modes"], jx["mask"], st)
    if flags is not None and np.asarray(flags).any():
        _raise_invalid(x, "g2rpo", C)
    return {k: to_torch(out[k]) for k in STATS}
