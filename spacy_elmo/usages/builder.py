"""Building a usage index: a corpus streamed through a pipeline with `elmo`.

The corpus (.txt/.txt.gz/.jsonl/.spacy, a file or a folder; documents as `training.corpus` reads
them) is tokenized and split into sentences by the pipeline with its elmo components (and the
components that listen to them) switched off. Only the sentences that hold a chosen word go
through the biLM (and, for plain words, only the texts in which a regular expression finds one
are tokenized at all), each as a Doc of its own: a usage's vector depends on its sentence alone.
"""

import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

import numpy
from spacy.language import Language
from spacy.tokens import Doc, Span, Token

from ..errors import InputError
from ..output_folders import check_claimable, check_not_inside
from ..pipeline.loading import elmo_names, elmo_pipe
from ..digests import CorpusDigest
from ..shards import Shard, balance_note, chunk_docs, shard_record, what_ran
from ..text_corpus import corpus_files, files_progress_bar, read_texts
from ..types import PathLike
from ..bilm.fingerprint import bilm_fingerprint
from .capitals import as_read, lemma_setters
from .words import split_pos, target_pos
from .index import UsageIndex, mixed, parse_layer, usage_key
from .lemmas import add_lookup_lemmatizer
from .layout import USAGE_INDEX
from .storage import IndexWriter

_SENTENCES_PER_BATCH = 256  # sentences gathered before the biLM runs over them
# what the parts of one index must share (`merge` refuses parts that differ in any)
SHARD_SETTINGS = (
    "model",
    "load",
    "fingerprint",
    "elmo",
    "layer_weights",
    "layers",
    "context",
    "fold_capitals",
    "pos",
    "match",
    "words",
    "files",
    "lemmatizer",
)


def build_usage_index(
    nlp: Language,
    corpus: PathLike,
    output: PathLike,
    *,
    model: Optional[PathLike] = None,
    words: Optional[Sequence[str]] = None,
    lemmas: bool = False,
    layer: Union[str, int, Sequence[float]] = "top",
    all_layers: bool = False,
    keep_capitals: bool = False,
    pos: Optional[str] = None,
    elmo: Optional[str] = None,
    docs_per_batch: int = 64,
    shard: Shard = Shard(),
    progress: bool = True,
    log: Callable[[str], Any] = print,
) -> UsageIndex:
    """Index the usages of every token (or of `words`) in `corpus` into the folder `output`.

    nlp (Language): a pipeline with an elmo component.
    model (Optional[PathLike]): where `nlp` was loaded from (recorded, so that queries load it).
    words (Optional[Sequence[str]]): index only these words (matched on `token.lower_`, or on the
        lemma with `lemmas`); None indexes every token that is not whitespace.
    lemmas (bool): match `words` on lemmas and key usages by lemma: the pipeline's lemmatizer, else spaCy's
        lookup lemmatizer for its language, added here (named in the index's meta).
    layer: "top", "average", a layer number or one weight per layer (see `parse_layer`).
    all_layers (bool): also keep every layer of each usage (layers.bin) and its context-only vectors
        (context.bin), so that queries pick the layer or a mix (`UsageIndex.with_layer`) without embedding again.
    keep_capitals (bool): let the biLM read sentences set in capitals as written (default: lowercased; capitals.py).
    pos (Optional[str]): only usages of this part of speech (a Universal POS tag, e.g. "NOUN"); a word given as WUG
        writes it ("attack_nn", "circle_vb") keeps its own. The pipeline must tag parts of speech (a tagger or
        morphologizer that does not need ELMo).
    elmo (Optional[str]): the elmo component to use; None: the first.
    docs_per_batch (int): documents per nlp.pipe batch; 16 of them make a chunk (see shards.py):
        the biLM's batches never span two chunks, so that the shards of a corpus add up to the
        single run's index.
    shard (Shard): index only this shard's documents (see shards.py): a part for `merge`, which
        may hold no usage.
    RETURNS (UsageIndex): the index, its queries embedded with `nlp`.
    """
    names = elmo_names(nlp)
    if not names:
        raise InputError("the pipeline has no elmo component: give a pipeline with one, or a folder with options.json + weights.hdf5")
    if elmo is not None and elmo not in names:
        raise InputError(f"the pipeline has no elmo component named {elmo!r} (it has {', '.join(names)})")
    pipe = elmo_pipe(nlp, elmo or names[0])
    weights = parse_layer(layer, pipe.options.n_output_layers)
    if isinstance(words, str):  # "bank" or "bank,suit", as on the command line; not its letters
        words = words.split(",")
    pos_of = target_pos([w.strip() for w in words if w.strip()] if words is not None else None, pos)
    chosen = {split_pos(w.strip())[0].lower() for w in words or () if w.strip()} or None
    if words is not None and not chosen:
        raise InputError("--words names no word: give one or more words, comma-separated")
    files = corpus_files(corpus)
    check_not_inside(output, corpus, "the corpus")
    check_claimable(output, USAGE_INDEX, " for the index")
    off = _elmo_dependents(nlp, names)
    if pos_of:
        _check_tagger(nlp, off, pos_of)
    lemmatizer = None
    if lemmas:
        lemmatizer = _check_lemmas(nlp, off, log)
    meta = {
        **bilm_meta(nlp, pipe, model, weights, all_layers, keep_capitals),
        "lemmatizer": lemmatizer,
        "match": "lemma" if lemmas else "lower",
        "words": sorted(chosen) if chosen else None,
        "pos": pos_of or None,
        "files": [str(f.resolve()) for f in files],
    }
    match = str(meta["match"])
    key: Callable[[Token], str] = lambda t: usage_key(t, match)  # noqa: E731
    prefilter = _word_pattern(chosen) if chosen and not lemmas else None
    bar = files_progress_bar(files, progress, "Indexing usages")
    types: Counter = Counter()
    corpus_read = CorpusDigest()
    with IndexWriter(output, meta) as writer:
        texts = _numbered_texts(
            files, nlp, prefilter, bar.update if bar is not None else None, shard, chunk_docs(docs_per_batch), corpus_read
        )
        docs = nlp.pipe(texts, as_tuples=True, disable=off, batch_size=docs_per_batch)
        if lemmas and not keep_capitals:
            docs = _lemmas_as_read(docs, nlp, lemma_setters(nlp, off))
        layers_of = UsageLayers(pipe) if all_layers else None
        started, sentences = time.monotonic(), 0
        for batch in _sentence_batches(docs, chosen, key, pos_of):
            _index_batch(batch, pipe, weights, key, writer, types, layers_of, not keep_capitals)
            sentences += len(batch)
            if bar is not None:
                seconds = max(time.monotonic() - started, 1e-9)
                usages = writer.n_usages
                bar.set_postfix_str(
                    f"{sentences:,} sentences ({sentences / seconds:,.1f}/s), {usages:,} usages ({usages / seconds:,.1f}/s)", refresh=False
                )
        if bar is not None:
            bar.close()
        if not shard.whole:
            settings = {k: meta[k] for k in SHARD_SETTINGS}
            record = shard_record(shard, chunk_docs(docs_per_batch), corpus_read, settings, what_ran([pipe.bilm]))
            writer.meta["shard"] = {**record, "chunks": writer.chunks}
        elif writer.n_usages == 0:
            what = f"no usage of {', '.join(sorted(chosen))}" if chosen else "no token"
            kept = f", and {output} was left as it was" if os.path.lexists(output) else ""  # said only of what is there
            raise InputError(f"{what} in {corpus}: nothing was indexed{kept}. Check the words (--words) and the corpus")
        type_list = sorted(types.items(), key=lambda item: (-item[1], item[0]))
        type_vectors = pipe.bilm.embed_words([t for t, _ in type_list])
        folder = writer.finish(type_list, type_vectors)
    index = UsageIndex().from_disk(folder)
    index._embed_with(nlp, pipe.name)
    what = f"of {len(index.keys):,} of the {len(chosen):,} words" if chosen else f"of {len(index.keys):,} words"
    log(
        f"Indexed {len(index):,} usages {what} in {index.meta['n_sentences']:,} sentences of {corpus} "
        f"in {index.meta['seconds']:.0f}s: {folder}"
    )
    note = balance_note(shard, chunk_docs(docs_per_batch), corpus_read.n_docs)
    if note:
        log(note)
    return index


def bilm_meta(
    nlp: Language, pipe: Any, model: Optional[PathLike], weights: numpy.ndarray, all_layers: bool, keep_capitals: bool = False
) -> Dict[str, Any]:
    """What an index's meta.json records of the biLM that made its vectors, whatever the usages came from: where
    the pipeline was loaded from (a released model's name stays a name, read from the download cache), how,
    the biLM's fingerprint, the component, the layer weights, whether every layer is kept, whether sentences set
    in capitals were read lowercased, the vectors' width."""
    return {
        "model": (str(Path(model).resolve()) if Path(model).exists() else str(model)) if model is not None else "",
        "load": {"lang": nlp.lang},
        "fingerprint": bilm_fingerprint(pipe.bilm),
        "elmo": pipe.name,
        "layer_weights": [float(w) for w in weights],
        "layers": pipe.options.n_output_layers if all_layers else None,
        "context": bool(all_layers),  # context.bin: every layer's context-only vectors, kept with every layer
        "fold_capitals": not keep_capitals,
        "dim": 2 * pipe.options.projection_dim,
    }


class UsageLayers:
    """Every layer of chosen tokens of Docs run through an elmo component: the target's own vectors, and the
    context-only ones (`context_layers`: what the two language models predict the token from)."""

    def __init__(self, pipe: Any) -> None:
        from ..bilm.context_prediction import boundary_states

        self.pipe = pipe
        self.bos, self.eos = boundary_states(pipe.bilm)

    def of(self, doc: Doc, tokens: Sequence[int]) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """RETURNS: float32 (n, L + 1, D) each: the tokens' own layers and their context-only layers."""
        from ..bilm.context_prediction import context_layers
        from ..layers.bilm_model import doc_sequences

        layers = doc._.elmo.layers
        own = numpy.transpose(layers[:, list(tokens)], (1, 0, 2)).astype("float32")
        spans = doc_sequences(self.pipe.model, [doc])[0]
        return own, context_layers(layers, tokens, spans, self.bos, self.eos)


def build_from_settings(
    nlp: Language,
    settings: Dict[str, Any],
    output: PathLike,
    shard: Shard = Shard(),
    progress: bool = False,
    log: Callable[[str], Any] = print,
) -> UsageIndex:
    """`build_usage_index` with `spacy-elmo index-usages`'s settings ("model", "corpus", "words",
    "lemmas", "layer", "docs_per_batch"): what the command and its Ray workers run."""
    return build_usage_index(
        nlp,
        settings["corpus"],
        output,
        model=settings["model"],
        words=settings["words"],
        lemmas=settings["lemmas"],
        pos=settings.get("pos"),
        layer=settings["layer"],
        all_layers=bool(settings.get("all_layers")),
        keep_capitals=bool(settings.get("keep_capitals")),
        docs_per_batch=settings["docs_per_batch"],
        shard=shard,
        progress=progress,
        log=log,
    )


def _elmo_dependents(nlp: Language, names: List[str]) -> List[str]:
    """The elmo components and every component that needs their output: off while tokenizing."""
    off = set(names)
    for name in names:
        off.update(elmo_pipe(nlp, name).listening_components)
    for name in nlp.pipe_names:
        if any(r.startswith("doc._.elmo") or r.startswith("token._.elmo") for r in nlp.get_pipe_meta(name).requires):
            off.add(name)
    return [name for name in nlp.pipe_names if name in off]


PENN_UPOS = (("NNP", "PROPN"), ("NN", "NOUN"), ("VB", "VERB"), ("MD", "AUX"), ("JJ", "ADJ"), ("RB", "ADV"), ("PRP", "PRON"))


def coarse_pos(token: Token) -> str:
    """RETURNS (str): the token's Universal POS tag: `pos_`, or from an English Penn tag where only `tag_` is set."""
    if token.pos_:
        return token.pos_
    return next((upos for prefix, upos in PENN_UPOS if token.tag_.startswith(prefix)), token.tag_)


def _pos_matches(token: Token, key: str, pos_of: Dict[str, str]) -> bool:
    wanted = pos_of.get(key) or pos_of.get("*")
    if wanted is None:
        return True
    if not token.pos_ and not token.tag_:
        raise InputError(
            f"a part of speech is asked for ({wanted} for {key!r}), but the pipeline tagged no token of a sentence: give a pipeline "
            "whose tagger runs without ELMo"
        )
    return coarse_pos(token) == wanted


def _check_tagger(nlp: Language, off: List[str], pos_of: Dict[str, str]) -> None:
    """Refuse, in one line, parts of speech with a pipeline that has nothing to tag them (before any work)."""
    taggers = [
        name
        for name in nlp.pipe_names
        if name not in off
        and (
            {"token.pos", "token.tag"} & set(nlp.get_pipe_meta(name).assigns)
            or nlp.get_pipe_meta(name).factory in ("attribute_ruler", "tagger", "morphologizer")
        )
    ]
    if not taggers:
        asked = ", ".join(f"{w} {p}" for w, p in sorted(pos_of.items()))
        raise InputError(
            f"usages of one part of speech ({asked}) need a pipeline that tags them, and this one has no tagger: give --model a "
            "spaCy pipeline with a tagger and an elmo component (a trained pipeline with add_elmo, saved with nlp.to_disk), or "
            "leave out --pos and the words' _nn/_vb suffixes"
        )


def _check_lemmas(nlp: Language, off: List[str], log: Callable[[str], Any]) -> str:
    """RETURNS (str): what sets the lemmas: the pipeline's own lemmatizer, or spaCy's lookup lemmatizer for the
    pipeline's language, added here (spacy-lookups-data's tables)."""
    setters = [name for name in nlp.pipe_names if "token.lemma" in nlp.get_pipe_meta(name).assigns]
    if not setters:
        added = add_lookup_lemmatizer(nlp)
        log(f"Lemmas: {added}, added to the pipeline (a pipeline with a lemmatizer of its own uses that one)")
        return added
    if all(name in off for name in setters):
        raise InputError(
            f"the lemmatizer ({', '.join(setters)}) needs ELMo's output, which is computed only for "
            "the sentences that hold a chosen word: match word forms (--words without --lemmas)"
        )
    return f"the pipeline's {', '.join(setters)}"


def _lemmas_as_read(docs: "Iterable[Tuple[Doc, Where]]", nlp: Language, setters: List[str]) -> "Iterator[Tuple[Doc, Where]]":
    """The docs, each sentence set in capitals given the lemmas of its words as the biLM reads it (capitals.py):
    a lemmatizer looks "BANKS" up as written and finds nothing, so headline usages of "bank" were filed under "banks"."""
    from .capitals import lemmas_as_read

    for doc, where in docs:
        for sent in doc.sents if doc.has_annotation("SENT_START") else [doc[:]]:
            lemmas = lemmas_as_read(sent, nlp, setters)
            for token, lemma in zip(sent, lemmas or ()):
                token.lemma_ = lemma
        yield doc, where


def _word_pattern(words: Set[str]) -> "re.Pattern[str]":
    """A text holds a chosen word as a token only where this finds it (case-insensitive, not
    inside a longer run of word characters)."""
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


Where = Tuple[int, int, int]  # file number, document number in the file, chunk


def _numbered_texts(
    files: List[Path],
    nlp: Language,
    prefilter: Optional["re.Pattern[str]"],
    progress: Optional[Callable[[int], None]],
    shard: Shard,
    chunk_size: int,
    corpus_read: CorpusDigest,
) -> Iterator[Tuple[str, Where]]:
    """(text, (file number, document number, chunk)) for every text of the shard's documents
    that the prefilter lets through; `corpus_read` takes every text of the corpus."""
    number = -1  # in the whole corpus
    for file_number, path in enumerate(files):
        doc_number = -1
        for text, new_doc in read_texts(path, nlp.vocab, progress):
            doc_number += new_doc
            number += new_doc
            corpus_read.add(text, new_doc)
            chunk = number // chunk_size
            if shard.owns(chunk) and (prefilter is None or prefilter.search(text)):
                yield text, (file_number, doc_number, chunk)


Selected = Tuple[Span, List[int], Where]


def _sentence_batches(
    docs: Iterable[Tuple[Doc, Where]], chosen: Optional[Set[str]], key: Callable[[Token], str], pos_of: Optional[Dict[str, str]] = None
) -> Iterator[List[Selected]]:
    """Batches of (sentence, indices of its tokens to index, where), in corpus order; a batch
    never spans two chunks, so that a shard batches its chunks as the single run does."""
    batch: List[Selected] = []
    for doc, where in docs:
        if batch and batch[-1][2][2] != where[2]:
            yield batch
            batch = []
        sentences = doc.sents if doc.has_annotation("SENT_START") else [doc[:]]
        for sent in sentences:
            tokens = [
                t.i - sent.start
                for t in sent
                if not t.is_space and (chosen is None or key(t) in chosen) and (not pos_of or _pos_matches(t, key(t), pos_of))
            ]
            if tokens:
                batch.append((sent, tokens, where))
        if len(batch) >= _SENTENCES_PER_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _index_batch(
    batch: List[Selected],
    pipe: Any,
    weights: numpy.ndarray,
    key: Callable[[Token], str],
    writer: IndexWriter,
    types: Counter,
    layers_of: Optional[UsageLayers] = None,
    fold: bool = True,
) -> None:
    sentence_docs = [sent.as_doc() for sent, _, _ in batch]
    read = [as_read(doc, fold) for doc in sentence_docs]
    if writer.start_chunk(batch[0][2][2]):
        pipe.bilm.forget_words()  # each chunk from an empty word cache, in a shard as in the whole run
    first = writer.add_sentences({"text": sent.text, "file": where[0], "doc": where[1]} for sent, _, where in batch)
    vectors, keys, layers, context = [], [], [], []
    columns: Dict[str, List[int]] = {"usage_sentence": [], "usage_token": [], "usage_start": [], "usage_end": []}
    for number, (original, doc, (_, tokens, _)) in enumerate(zip(sentence_docs, pipe.pipe(read), batch)):
        types.update(t.text for t in original if not t.is_space)
        vectors.append(mixed(doc._.elmo.layers[:, tokens], weights))
        if layers_of is not None:
            own, around = layers_of.of(doc, tokens)
            layers.append(own)
            context.append(around)
        for i in tokens:
            token = original[i]  # the text as written: offsets and keys
            columns["usage_sentence"].append(first + number)
            columns["usage_token"].append(i)
            columns["usage_start"].append(token.idx)
            columns["usage_end"].append(token.idx + len(token.text))
            keys.append(key(token))
    writer.add_usages(
        numpy.concatenate(vectors),
        {k: numpy.asarray(v) for k, v in columns.items()},
        keys,
        numpy.concatenate(layers) if layers_of is not None else None,
        numpy.concatenate(context) if layers_of is not None else None,
    )
