"""index-usages, merge, index-ann, neighbours, change: the usage index and what reads it."""

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import typer

from ..errors import InputError
from ._util import (
    bilm_source,
    check_output_file,
    command,
    parse_shard,
    quiet_option,
    ray_option,
    say,
    shard_option,
    threads_option,
    use_threads,
    workers_option,
)


@command("index-usages")
def index_usages_cli(
    model: str = typer.Argument(..., help="Pipeline folder with elmo, biLM folder, or a released model's name"),
    corpus: Path = typer.Argument(..., help=".txt/.txt.gz/.jsonl/.spacy, a file or a folder of them", exists=True),
    output: Path = typer.Argument(..., help="The index folder to write (new, empty, or an index built before)"),
    words: str = typer.Option(
        "", "--words", "-w", help="Index only these words, comma-separated (matched on token.lower_); default: every token"
    ),
    lemmas: bool = typer.Option(False, "--lemmas", help="Match --words on lemmas (the pipeline needs a lemmatizer)"),
    layer: str = typer.Option(
        "top", "--layer", help="The vectors: top, average, a layer number (0 = token layer) or one weight per layer (0.2,0.3,0.5)"
    ),
    lang: str = typer.Option("en", help="Language of the tokenizer when MODEL holds original files"),
    docs_per_batch: int = typer.Option(64, "--docs-per-batch", help="Documents per nlp.pipe batch"),
    shard: str = shard_option(),
    ray: str = ray_option(),
    workers: int = workers_option(),
    ann: bool = typer.Option(
        False, "--ann", help="Also build the approximate search (FAISS; pip install 'spacy-elmo[ann]'): see index-ann"
    ),
    threads: int = threads_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Index the usages of words in a corpus, each with its ELMo vector, for `spacy-elmo
    neighbours`. With --words, only the sentences that hold one go through the biLM. OUTPUT
    appears complete or not at all; files you put in it stay. --shard I/N writes one part of N
    (`spacy-elmo merge` joins them); --ray runs every part on a Ray cluster and merges them."""
    part = parse_shard(shard, ray)
    if ann and not part.whole:
        raise typer.BadParameter(
            "a part's approximate search is never used: build it on the merged index (spacy-elmo index-ann MERGED)", param_hint="--ann"
        )
    if ann:
        from ..usages.ann import faiss_module

        faiss_module()  # before the work: a missing extra is said now
    chosen = [w for w in words.split(",") if w.strip()] if words else None
    if words and not chosen:
        raise typer.BadParameter("name one or more words, comma-separated", param_hint="--words")
    settings = {
        "model": bilm_source(model),
        "corpus": str(corpus.resolve()),
        "words": chosen,
        "lemmas": lemmas,
        "layer": layer,
        "lang": lang,
        "docs_per_batch": docs_per_batch,
    }
    if ray is None:
        use_threads(threads)
    index_usages(settings, output, shard=part, ray=ray, workers=workers, ann=ann, quiet=quiet)


def index_usages(
    settings: Dict[str, Any],
    output: Path,
    *,
    shard: Any = None,
    ray: Optional[str] = None,
    workers: int = 0,
    ann: bool = False,
    quiet: bool = False,
) -> None:
    """Write the usage index that SETTINGS ask for (index-usages' options by name: "model", "corpus",
    "words", "layer", ...) to OUTPUT: shard SHARD of the corpus, or every shard on the Ray cluster RAY,
    merged; with ANN, its approximate search too."""
    if ray is not None:
        from ..distributed import run_index_usages

        run_index_usages(ray, settings, output, workers=workers, quiet=quiet)
    else:
        from ..pipeline.loading import load_elmo_pipeline
        from ..shards import Shard
        from ..usages.builder import build_from_settings

        part = shard if shard is not None else Shard.parse(None)
        nlp = load_elmo_pipeline(settings["model"], settings["lang"])
        build_from_settings(nlp, settings, output, part, progress=not quiet, log=say(quiet))
    if ann:
        from ..usages.ann_build import build_ann

        build_ann(output, log=say(quiet))


@command("merge")
def merge_cli(
    output: Path = typer.Argument(..., help="The merged output: an index folder, or a .hdf5 / .spacy file"),
    parts: List[Path] = typer.Argument(
        ..., help="Every part: the outputs of index-usages or embed with --shard 0/N ... N-1/N", exists=True
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it is a file that exists"),
    virtual: bool = typer.Option(
        False,
        "--virtual",
        help="HDF5: refer to the parts' datasets instead of copying them (seconds at any size; the parts must stay where they are)",
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Join the N parts that `index-usages` or `embed` wrote with --shard I/N into the output one
    run over the whole corpus writes (the same usages, sentences and vectors, bit for bit, in
    corpus order). Parts made with different pipelines, biLMs, layers or corpora, or a shard
    missing or given twice, are refused. Joining usage indexes loads the index's biLM once."""
    from ..distributed.merge import merge_parts

    merge_parts(parts, output, overwrite=overwrite, log=say(quiet), virtual=virtual)


@command("index-ann")
def index_ann_cli(
    index_path: Path = typer.Argument(..., metavar="INDEX", help="A folder written by spacy-elmo index-usages or merge", exists=True),
    lists: int = typer.Option(0, "--lists", help="Inverted lists (0: a power of two near 2 sqrt(usages), at most usages / 64)", min=0),
    code_bytes: int = typer.Option(
        0,
        "--code-bytes",
        help="Sub-quantizers of the product-quantized codes, a byte each (fewer bits below about 10,000 usages; 0: width / 8)",
        min=0,
    ),
    train_size: int = typer.Option(0, "--train-size", help="Usages to train on (0: 64 per list, at least 100,000)", min=0),
    quiet: bool = quiet_option(),
) -> None:
    """Build (or build again) the approximate search of a usage index with FAISS (pip install
    'spacy-elmo[ann]'): an IVF-PQ index beside the vectors, which `neighbours` and
    `UsageIndex.most_similar` then use for searches over more than 100,000 usages, scoring its
    candidates exactly. Without one, every search is exact."""
    from ..usages.ann_build import build_ann

    build_ann(index_path, lists=lists, code_bytes=code_bytes, train_size=train_size, log=say(quiet))


@command("neighbours")
def neighbours_cli(
    index_path: Path = typer.Argument(..., metavar="INDEX", help="A folder written by spacy-elmo index-usages", exists=True),
    sentence: str = typer.Argument(..., help="The sentence the word is used in"),
    word: str = typer.Option(..., "--word", "-w", help="The word of the sentence to look up (its first occurrence; case-insensitive)"),
    n: int = typer.Option(5, "--n", "-n", help="How many neighbours", min=1),
    model: Path = typer.Option(
        None,
        "--model",
        help="Embed the sentence with this pipeline (default: the one the index was built with); it must hold the same biLM",
    ),
    any_word: bool = typer.Option(False, "--any-word", help="Search the usages of every word, not only of WORD"),
    min_count: int = typer.Option(
        1, "--min-count", help="Context-free neighbours: only word types seen this often in the indexed sentences", min=1
    ),
    exact: bool = typer.Option(False, "--exact", help="Search exactly, also where the index has an approximate search"),
    approximate: bool = typer.Option(
        False, "--approximate", help="Use the index's approximate search (index-ann) also below 100,000 usages searched"
    ),
    threads: int = threads_option(),
) -> None:
    """The usages in INDEX nearest to WORD as used in SENTENCE (cosine of their ELMo vectors),
    and WORD's context-free neighbours (the biLM's token layer; static vectors where the pipeline
    has them): the paper's Table 4 on your corpus. The table says which search answered: exact, or the
    approximate one that an index of more than 100,000 usages with index-ann uses."""
    if exact and approximate:
        raise typer.BadParameter("give --exact or --approximate, not both", param_hint="--approximate")
    use_threads(threads)
    table = neighbours(
        index_path, sentence, word, n=n, model=model, any_word=any_word, min_count=min_count, exact=exact, approximate=approximate
    )
    typer.echo(table)


def neighbours(
    index_path: Path,
    sentence: str,
    word: str,
    *,
    n: int = 5,
    model: Optional[Path] = None,
    any_word: bool = False,
    min_count: int = 1,
    exact: bool = False,
    approximate: bool = False,
) -> str:
    """The table that `spacy-elmo neighbours` prints: WORD's first use in SENTENCE against the index."""
    from ..usages.index import UsageIndex
    from ..usages.report import neighbours_table

    index = UsageIndex().from_disk(index_path)
    if model is not None:
        index.use_model(model)
    doc = index.nlp(sentence)
    token = next((t for t in doc if t.lower_ == word.lower()), None)
    if token is None:
        raise typer.BadParameter(f"{word!r} is not a token of the sentence ({' '.join(t.text for t in doc)})", param_hint="--word")
    return neighbours_table(index, token, n=n, same_word=not any_word, min_count=min_count, exact=exact, approximate=approximate)


@command("change")
def change_cli(
    index_a: Path = typer.Argument(
        ...,
        metavar="A",
        help="Corpus A, e.g. the earlier period: a usage index (spacy-elmo index-usages), or a corpus (with --model)",
        exists=True,
    ),
    index_b: Path = typer.Argument(
        ..., metavar="B", help="Corpus B: an index built with the same MODEL, --layer and --lemmas, or a corpus", exists=True
    ),
    output: Path = typer.Argument(..., help="The table to write: .tsv, or .json"),
    words: Path = typer.Option(
        None, "--words", "-w", help="The target words, one a line (default: every word with --min-usages in both)", exists=True
    ),
    measure: List[str] = typer.Option(
        ["apd", "prt"],
        "--measure",
        "-m",
        help="apd, prt and/or jsd (repeat the option; jsd: over 8 clusters of the word's usages, at most 10,000 a side "
        "sampled with seed 0); the first orders the rows",
    ),
    min_usages: int = typer.Option(5, "--min-usages", help="Fewer usages in either index: listed with a note, never scored", min=1),
    standardize: bool = typer.Option(False, "--standardize", help="Subtract each index's mean usage vector first"),
    model: str = typer.Option(
        None, "--model", help="A or B given as a corpus: index it with this pipeline, biLM folder or released name first"
    ),
    layer: str = typer.Option("top", "--layer", help="A corpus's usage vectors (as index-usages --layer)"),
    lemmas: bool = typer.Option(False, "--lemmas", help="A corpus's words matched on lemmas (as index-usages --lemmas)"),
    lang: str = typer.Option("en", help="Language of the tokenizer when MODEL holds original files"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it exists"),
    quiet: bool = quiet_option(),
) -> None:
    """Which words changed meaning between two corpora: for each word, its usages in each and how much they
    differ, APD (the mean cosine distance over all pairs of one usage from each, exact), PRT (1 / cosine of the
    two mean usages) and JSD (of the two sides' shares of clusters of the word's usages), most changed first
    (Kutuzov & Giulianelli 2020; docs/senses.md). A and B are usage indexes, or corpora that --model indexes
    first (only the --words, where given) into a temporary folder."""
    from ..progress_bar import progress_bar
    from ..usages.change import MEASURES

    bad = [m for m in measure if m not in MEASURES]
    if bad:
        raise typer.BadParameter(f"{', '.join(bad)}: use {', '.join(MEASURES)}", param_hint="--measure")
    if output.suffix not in (".tsv", ".json"):
        raise typer.BadParameter(f"{output.name}: write a .tsv or a .json file", param_hint="OUTPUT")
    check_output_file(output, overwrite)

    def progress(items: Iterable[Any]) -> Iterable[Any]:
        return progress_bar(list(items), desc="Comparing", unit=" words", disable=True if quiet else None, leave=False)

    corpus = {"model": model, "layer": layer, "lemmas": lemmas, "lang": lang, "progress": not quiet, "log": say(quiet)}
    rows = change(
        index_a, index_b, output, words, measure, min_usages=min_usages, standardize=standardize, progress=progress, corpus=corpus
    )
    scored = sum(1 for r in rows if r.scores)
    say(quiet)(f"Wrote the change of {len(rows)} words to {output} ({scored} scored, {len(rows) - scored} with too few usages)")


def change(
    index_a: Path,
    index_b: Path,
    output: Path,
    words: Optional[Path] = None,
    measure: Sequence[str] = ("apd", "prt"),
    *,
    min_usages: int = 5,
    standardize: bool = False,
    progress: Optional[Callable[[Iterable[Any]], Iterable[Any]]] = None,
    corpus: Optional[Dict[str, Any]] = None,
) -> List[Any]:
    """Write OUTPUT (.tsv or .json): how each word of WORDS (a file, one a line; default: every word with
    MIN_USAGES in both) changed between A and B, usage indexes or corpora. Returns the rows, most changed first.

    corpus (Optional[Dict[str, Any]]): how a corpus given as A or B is indexed first: "model" (needed then),
        "layer", "lemmas", "lang", "progress", "log".
    """
    import tempfile

    from ..output_folders import USAGE_INDEX, is_own
    from ..usages.change import read_words, write_changes
    from ..usages.index import UsageIndex

    targets = read_words(words) if words is not None else None
    sides = [Path(index_a), Path(index_b)]
    corpora = [p for p in sides if not is_own(p, USAGE_INDEX)]
    with tempfile.TemporaryDirectory(prefix="spacy-elmo-change-") as scratch:
        if corpora:
            sides = _index_corpora(sides, corpora, targets, corpus or {}, Path(scratch))
        a, b = UsageIndex().from_disk(sides[0]), UsageIndex().from_disk(sides[1])
        if targets is not None:
            absent = [w for w in targets if not len(a.rows_of(w)) and not len(b.rows_of(w))]
            if len(absent) == len(targets):
                raise InputError(f"none of the {len(targets)} words of {words} has a usage in either index (keys: {a.match})")
        rows = a.change(b, targets, list(measure), min_usages=min_usages, standardize=standardize, progress=progress)
    settings = {"index_a": str(index_a), "index_b": str(index_b), "min_usages": min_usages, "standardize": standardize}
    if "jsd" in measure:
        from ..usages.change import JSD_CLUSTERS, JSD_SEED, JSD_USAGES

        settings["jsd"] = f"{JSD_CLUSTERS} clusters, at most {JSD_USAGES} usages a side, seed {JSD_SEED}"
    write_changes(rows, output, list(measure), settings)
    return rows


def _index_corpora(
    sides: List[Path], corpora: List[Path], targets: Optional[List[str]], corpus: Dict[str, Any], scratch: Path
) -> List[Path]:
    """The sides with each corpus among them replaced by its usage index, built in `scratch` by one pipeline."""
    from ..pipeline.loading import load_elmo_pipeline
    from ..usages.builder import build_usage_index

    if corpus.get("model") is None:
        raise InputError(f"{corpora[0]} is not a usage index: give --model MODEL to index it as a corpus, or give an index")
    nlp = load_elmo_pipeline(corpus["model"], corpus.get("lang", "en"))
    built = []
    for k, side in enumerate(sides):
        if side not in corpora:
            built.append(side)
            continue
        folder = scratch / f"index-{k}"
        build_usage_index(
            nlp,
            side,
            folder,
            model=corpus["model"],
            words=targets,
            lemmas=bool(corpus.get("lemmas")),
            layer=corpus.get("layer", "top"),
            progress=bool(corpus.get("progress")),
            log=corpus.get("log", print),
        )
        built.append(folder)
    return built
