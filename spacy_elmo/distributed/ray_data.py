"""ELMo layers for text already held in Ray Data: a callable class for `Dataset.map_batches`, whose
actors load the pipeline once each.

>>> import ray
>>> from spacy_elmo.distributed import ElmoBatchEmbedder
>>> ds = ray.data.read_text("corpus.txt")  # a column "text"
>>> ds = ds.map_batches(ElmoBatchEmbedder, fn_constructor_kwargs={"model": "small", "layers": "top"}, concurrency=4, batch_size=64)
"""

from typing import Any, Dict, List

import numpy

from ..errors import InputError

LAYERS = ("all", "top", "average")


class ElmoBatchEmbedder:
    """Adds to each batch a column of ELMo layers, one array per row's text (float32, or `dtype`):
    "all" (L + 1, n_tokens, 2P), "top" or "average" (n_tokens, 2P); and a column of the tokens.

    model (str): a pipeline folder with an elmo component, a biLM folder, or a released model's name.
    text_column (str): the column holding the texts; output_column (str): the column of layers;
    tokens_column (str): the column of each text's tokens (a list of strings), "" for none.
    layers (str): "all", "top" or "average"; lang, sentences, dtype, precision: as `spacy-elmo embed`.
    """

    def __init__(
        self,
        model: str,
        *,
        text_column: str = "text",
        output_column: str = "elmo",
        tokens_column: str = "tokens",
        layers: str = "all",
        lang: str = "en",
        sentences: bool = True,
        dtype: str = "float32",
        precision: str = "fp32",
        docs_per_batch: int = 64,
    ) -> None:
        from ..pipeline.loading import load_elmo_pipeline

        if layers not in LAYERS:
            raise InputError(f"layers {layers!r}: use one of {', '.join(LAYERS)}")
        self.nlp = load_elmo_pipeline(model, lang, sentences, dtype, precision)
        self.text_column, self.output_column, self.tokens_column = text_column, output_column, tokens_column
        self.layers, self.docs_per_batch = layers, docs_per_batch

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        from ..pipeline.export import layer_data

        if self.text_column not in batch:
            raise InputError(f"the batch has no column {self.text_column!r} (it has {', '.join(batch)}): give text_column")
        texts = [str(text) for text in batch[self.text_column]]
        docs = list(self.nlp.pipe(texts, batch_size=self.docs_per_batch))
        out = dict(batch)
        out[self.output_column] = _column([layer_data(doc, self.layers) for doc in docs])
        if self.tokens_column:
            out[self.tokens_column] = _column([[t.text for t in doc] for doc in docs])  # lists: Arrow's list<string>
        return out


def _column(arrays: List[Any]) -> numpy.ndarray:
    """One object array of per-row arrays of different shapes (what Ray Data takes as a column)."""
    column = numpy.empty(len(arrays), dtype=object)
    for i, array in enumerate(arrays):  # not column[:] = arrays, which broadcasts arrays of one shape
        column[i] = array
    return column
