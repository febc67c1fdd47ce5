"""Running an exported biLM (`spacy-elmo convert MODEL OUT.onnx`) with ONNX Runtime: numpy and
onnxruntime only, no torch or spaCy, so that it installs and runs where PyTorch does not.

>>> from spacy_elmo.bilm_onnx.runtime import OnnxBiLM
>>> bilm = OnnxBiLM("elmo.onnx")
>>> layers = bilm.embed([["Hello", "world", "!"]])  # [(L + 1, 3, 2P) float32 array]

The file's graph takes `char_ids` (B, T, W) int64, each row a sentence with its markers and 0 for
every padded position (as `token_ids.sentence_ids` lays them out), plus `word_ids` (B, T) int64 for
a biLM with a word embedding, and gives `layers` (L + 1, B, T, 2P) float32, 0 where padded; every
sentence's layers are those it has alone. What a runtime needs besides (the vocabulary, the sizes)
is in the model's metadata, under the keys below; `METADATA_DOC` says what each holds.
"""

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy

from ..errors import InputError
from .model_file import NotAModel, read_model_file
from ..machine_load import MAX_THREADS, LoadLooks, default_threads
from ..token_ids import UTF8, LearnedVocab, TokenInput, check_sentences, sentence_ids

# The value of the metadata key "spacy_elmo.format" of every exported biLM; a later layout gets v2.
FORMAT = "spacy-elmo bilm onnx v1"
METADATA_DOC = {
    "spacy_elmo.format": f"always {FORMAT!r}",
    "spacy_elmo.version": "the spacy-elmo version that exported it",
    "spacy_elmo.opset": "the ONNX opset of its graph (int8 also uses com.microsoft's DynamicQuantizeMatMul)",
    "spacy_elmo.options": "the biLM's hyperparameters (JSON, as the config block spacy-elmo.BiLM.v2 takes them)",
    "spacy_elmo.vocab": "'utf8', or the learned vocabulary as JSON {'chars': {char: id}, 'words': {word: id} or null}",
    "spacy_elmo.inputs": "the graph's inputs, comma-separated: 'char_ids' or 'char_ids,word_ids'",
    "spacy_elmo.max_characters_per_token": "W, the last axis of char_ids",
    "spacy_elmo.n_output_layers": "L + 1, the first axis of layers",
    "spacy_elmo.output_dim": "2P, the last axis of layers",
    "spacy_elmo.precision": "'fp32', or 'int8' (the products' weights int8, each input row quantized over its own range)",
    "spacy_elmo.weights_sha256": "the SHA-256 of the PyTorch biLM's weights it was made from (spacy_elmo.bilm.fingerprint)",
    "spacy_elmo.source": "what it was exported from (the biLM's format and folder name)",
}


def _onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise InputError("running an exported biLM needs ONNX Runtime: pip install 'spacy-elmo[onnx]' (or onnxruntime)") from None
    return onnxruntime


class OnnxBiLM:
    """An exported biLM, run by ONNX Runtime on the CPU.

    model (str | Path | bytes): the .onnx file `spacy-elmo convert` wrote, or its bytes.
    threads (Optional[int]): threads of each product, 1 to MAX_THREADS; None: as the PyTorch biLM and the elmo
        component do (bilm/threads.py): the cores not busy with other work, looked at again between the batches of
        `embed` (a new session where the number changes).
    """

    def __init__(self, model: "str | os.PathLike[str] | bytes", threads: Optional[int] = None) -> None:
        self.path = Path("<in memory>") if isinstance(model, bytes) else Path(model)
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS):
            raise InputError(f"threads={threads!r}: give 1 to {MAX_THREADS} threads, or None to follow the machine's load")
        if not isinstance(model, bytes) and not self.path.is_file():
            raise InputError(f"{self.path} not found (or not a file): give the .onnx file `spacy-elmo convert MODEL OUT.onnx` wrote")
        self._source: "str | bytes" = model if isinstance(model, bytes) else str(self.path)
        try:  # what the file holds, read before ONNX Runtime opens it (its versions read only some IR versions)
            held = read_model_file(self._source)
        except NotAModel as err:
            raise InputError(f"{self.path} is not a readable ONNX model ({err}): export it again with spacy-elmo convert") from None
        except OSError as err:
            raise InputError(f"{self.path} could not be read ({err.strerror or err}): check the file's permissions") from None
        self.ir_version = held.ir_version
        self.op_types = held.op_types
        self.metadata: Dict[str, str] = held.metadata
        if self.metadata.get("spacy_elmo.format") != FORMAT:
            found = self.metadata.get("spacy_elmo.format")
            seen = f"its format is {found!r}" if found else "no spacy_elmo.format in its metadata"
            raise InputError(
                f"{self.path} is not a biLM exported by spacy-elmo ({seen}): export it with `spacy-elmo convert MODEL OUT.onnx`"
            )
        try:
            self.options: Dict[str, Any] = json.loads(self.metadata["spacy_elmo.options"])
            vocab = self.metadata["spacy_elmo.vocab"]
            self.vocab: TokenInput = UTF8 if vocab == "utf8" else LearnedVocab.from_dict(json.loads(vocab))
            self.max_chars = int(self.metadata["spacy_elmo.max_characters_per_token"])
            self.n_output_layers = int(self.metadata["spacy_elmo.n_output_layers"])
            self.output_dim = int(self.metadata["spacy_elmo.output_dim"])
        except (KeyError, ValueError, TypeError) as err:
            raise InputError(f"{self.path} has damaged spacy-elmo metadata ({err!r}): export it again with spacy-elmo convert") from None
        self.precision = self.metadata.get("spacy_elmo.precision", "fp32")
        if self.precision not in ("fp32", "int8"):
            raise InputError(
                f"{self.path} names its precision {self.precision!r} in its metadata, which spacy-elmo never writes ('fp32' or "
                "'int8'): the file was edited or is another tool's; export it again with spacy-elmo convert"
            )
        self.weights_sha256 = self.metadata.get("spacy_elmo.weights_sha256", "")
        self._looks = None if threads is not None else LoadLooks(default_threads()[0])
        self.threads = threads if threads is not None else self._looks.threads  # type: ignore[union-attr]
        self.session = self._session(self.threads)
        self.input_names = [i.name for i in self.session.get_inputs()]
        self._check_graph()
        self._check_graph_nodes()

    def _check_graph(self) -> None:
        """Refuse, in one line, a graph whose inputs and output are not what its metadata says (a file edited, or
        another model's graph given spacy-elmo's metadata): it would embed wrongly without a word."""
        damaged = f"{self.path}'s graph does not match its spacy-elmo metadata"
        fix = "export it again with spacy-elmo convert"
        expected = ["char_ids"] + (["word_ids"] if getattr(self.vocab, "words", None) else [])  # a word embedding's ids
        if sorted(self.input_names) != sorted(expected):
            raise InputError(f"{damaged} (inputs {self.input_names}, its vocabulary needs {expected}): {fix}")
        outputs = self.session.get_outputs()
        if [o.name for o in outputs] != ["layers"] or outputs[0].type != "tensor(float)":
            raise InputError(f"{damaged} (outputs {[(o.name, o.type) for o in outputs]}, not one float tensor 'layers'): {fix}")
        shape = outputs[0].shape
        if len(shape) != 4 or any(
            isinstance(d, int) and d != want for d, want in ((shape[0], self.n_output_layers), (shape[3], self.output_dim))
        ):
            raise InputError(
                f"{damaged} (its output is {shape}, the metadata says {self.n_output_layers} layers of {self.output_dim}): {fix}"
            )
        char_shape = next(i.shape for i in self.session.get_inputs() if i.name == "char_ids")
        if len(char_shape) != 3 or (isinstance(char_shape[2], int) and char_shape[2] != self.max_chars):
            raise InputError(f"{damaged} (char_ids {char_shape}, the metadata says {self.max_chars} characters a token): {fix}")

    def _check_graph_nodes(self) -> None:
        """Refuse, in one line, metadata whose precision or layer count the graph itself contradicts: an int8 graph
        holds DynamicQuantizeMatMul nodes and a float32 one none; the options' L biLSTM layers give L + 1 output layers
        (an edited label would report one precision and run the other, 0.09 apart)."""
        damaged = f"{self.path}'s graph does not match its spacy-elmo metadata"
        fix = "export it again with spacy-elmo convert"
        n_layers = self.options.get("n_layers") if isinstance(self.options, dict) else None
        if not isinstance(n_layers, int) or isinstance(n_layers, bool) or n_layers + 1 != self.n_output_layers:
            raise InputError(
                f"{damaged} (its options say {n_layers!r} biLSTM layers, its output holds {self.n_output_layers} layers, "
                f"the token layer and one per biLSTM layer): {fix}"
            )
        int8_nodes = self.op_types["DynamicQuantizeMatMul"]
        graph_precision = "int8" if int8_nodes else "fp32"
        if graph_precision != self.precision:
            held = f"{int8_nodes} int8 products" if int8_nodes else "no int8 product"
            raise InputError(f"{damaged} (its metadata says {self.precision!r}, its graph holds {held}): {fix}")

    def _session(self, threads: int) -> Any:
        ort = _onnxruntime()
        settings = ort.SessionOptions()
        settings.log_severity_level = 3  # ORT's own warnings about unused initializers are not the user's
        settings.intra_op_num_threads = threads
        settings.inter_op_num_threads = 1
        try:
            return ort.InferenceSession(self._source, settings, providers=["CPUExecutionProvider"])
        except Exception as err:  # ORT raises its own classes for damaged files and IR versions it does not read
            reason = " ".join(str(err).split()) or type(err).__name__
            raise InputError(
                f"{self.path} (ONNX IR version {self.ir_version}) is not a readable ONNX model for onnxruntime "
                f"{getattr(ort, '__version__', '?')} ({reason}): export it again with spacy-elmo convert, or "
                "pip install -U onnxruntime where the reason is its IR version"
            ) from None

    def follow_load(self) -> None:
        """Between batches: where no number of threads was given, follow the machine's load (a new session when
        the number the load asks for changes; `machine_load.LoadLooks`)."""
        if self._looks is None:
            return
        wanted = self._looks.wanted()
        if wanted != self.threads:
            self.session, self.threads = self._session(wanted), wanted

    def __repr__(self) -> str:
        return f"OnnxBiLM({str(self.path)!r}, {self.n_output_layers} layers of {self.output_dim}, {self.precision})"

    def run(self, char_ids: numpy.ndarray, word_ids: Optional[numpy.ndarray] = None) -> numpy.ndarray:
        """Every layer of a batch.

        char_ids (numpy.ndarray): (B, T, W) int64, sentences with markers, 0 where padded.
        word_ids (Optional[numpy.ndarray]): (B, T) int64, for a biLM with a word embedding.
        RETURNS (numpy.ndarray): (L + 1, B, T, 2P) float32, 0 where padded.
        """
        char_ids = numpy.ascontiguousarray(char_ids, dtype=numpy.int64)
        if char_ids.ndim != 3 or char_ids.shape[2] != self.max_chars:
            raise InputError(f"char_ids must have the shape (batch, steps, {self.max_chars}), got {char_ids.shape}")
        B, T = char_ids.shape[:2]
        if B == 0 or T == 0:
            return numpy.zeros((self.n_output_layers, B, T, self.output_dim), dtype=numpy.float32)
        feed = {"char_ids": char_ids}
        if "word_ids" in self.input_names:
            if word_ids is None:
                raise InputError("this biLM has a word embedding: give word_ids (B, T) as well (token_ids.sentence_ids gives both)")
            feed["word_ids"] = numpy.ascontiguousarray(word_ids, dtype=numpy.int64)
        return self.session.run(["layers"], feed)[0]

    def batch(self, sentences: Sequence[Sequence[str]]) -> Dict[str, numpy.ndarray]:
        """RETURNS (Dict[str, numpy.ndarray]): the graph's inputs for `sentences` (token texts, no markers)."""
        chars, words = sentence_ids(sentences, self.max_chars, self.vocab)
        return {"char_ids": chars} if words is None else {"char_ids": chars, "word_ids": words}

    def embed(self, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> List[numpy.ndarray]:
        """Embed tokenized sentences, in batches of similar length (as `BiLM.embed`).

        sentences (Sequence[Sequence[str]]): token texts per sentence, without markers.
        batch_size (int): sentences per batch.
        RETURNS (List[numpy.ndarray]): one float32 array (L + 1, n_tokens, 2P) per sentence.
        """
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        check_sentences(sentences)
        by_length = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        results: List[numpy.ndarray] = [numpy.zeros(0)] * len(sentences)
        for start in range(0, len(by_length), batch_size):
            group = by_length[start : start + batch_size]
            self.follow_load()
            feed = self.batch([sentences[i] for i in group])
            layers = self.run(feed["char_ids"], feed.get("word_ids"))
            for row, i in enumerate(group):
                results[i] = numpy.ascontiguousarray(layers[:, row, 1 : len(sentences[i]) + 1])
        return results
