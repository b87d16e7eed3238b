"""Re-export of the shared tolerance helper for test modules (``from helpers import ...``)."""

from conftest import assert_close

__all__ = ["assert_close"]
