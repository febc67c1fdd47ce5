"""The files of a usage index folder (what each holds: see index.py)."""

from ..output_folders import USAGE_INDEX  # noqa: F401  (the folder marker's kind)

FORMAT_VERSION = 1
META = "meta.json"  # written last: a folder without it is no finished index
TIMINGS = ("seconds",)  # meta.json entries that say how long a build took, not what it holds
ARRAYS = ("usage_sentence.npy", "usage_token.npy", "usage_start.npy", "usage_end.npy", "usage_key.npy", "norms.npy")
ANN_INDEX, ANN_META = "ann.faiss", "ann.json"  # the optional approximate search (ann.py), of one build
LAYERS = "layers.bin"  # optional (index-usages --all-layers): float16 (n_usages, L + 1, D), every layer of each usage
# optional (meta "context", with --all-layers): float16 (n_usages, L + 1, D), each usage's context-only vectors: the
# forward half at the token before beside the backward half at the token after (bilm/context_prediction.py)
CONTEXT = "context.bin"
FILES = (
    META,
    "vectors.bin",
    LAYERS,
    CONTEXT,
    "sentences.jsonl",
    "keys.json",
    "types.json",
    "type_vectors.bin",
    *ARRAYS,
    ANN_INDEX,
    ANN_META,
)
