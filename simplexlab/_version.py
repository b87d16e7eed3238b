"""The package version, read in one place: the installed distribution's metadata."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("simplexlab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__", "install_command"]


def install_command(*extras: str) -> str:
    """How to install optional extras: the command of the install page's extras table
    (``docs/getting-started/install.md``), from a source checkout (torch pinned to a release with
    a CPU wheel; where the package index has none, that page adds PyTorch's CPU index).
    ``install_command("llm")`` -> ``python -m pip install "torch==2.13.0" -e ".[llm]"``."""
    return f'python -m pip install "torch==2.13.0" -e ".[{",".join(extras)}]"'
