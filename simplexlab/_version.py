"""The package version, read in one place: the installed distribution's metadata."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("simplexlab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
