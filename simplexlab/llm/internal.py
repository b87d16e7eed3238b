"""Internal API of the ``llm`` layer (like ``equinox.internal``): what the layers above
need from ``llm`` (and the benchmarks and tests may use) beyond its public face
:mod:`simplexlab.llm`.

Unstable: no compatibility promise, not for users; names may change or go without notice. Each
name is re-exported from the layer's private modules.
"""

from ._bridge import _advantages_program as advantages_program
from ._bridge import _schedule_key as schedule_key
from ._embed import MAX_SEQ_LENGTH, model_path
from ._embed import _embed as embed_tokens
from ._embed import _encoder as encoder
from ._modes import LINKAGE, MERGE, THRESHOLDS, TOKEN_WEIGHT
from ._modes import _agglomerate as agglomerate

__all__ = [
    "LINKAGE",
    "MAX_SEQ_LENGTH",
    "MERGE",
    "THRESHOLDS",
    "TOKEN_WEIGHT",
    "advantages_program",
    "agglomerate",
    "embed_tokens",
    "encoder",
    "model_path",
    "schedule_key",
]
