"""index-usages, merge, index-ann, neighbours, change: the usage index and what reads it."""

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

import typer

from ..change.sense_input import DEFAULT_SENSES
from ..change.verdict import DEFAULT_CONTROLS
from ..output_folders import KEPT_INDEXES, check_output_file, is_own
from ._util import (
    bilm_source,
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
        "",
        "--words",
        "-w",
        help="Index only these words: a file (one a line) or a comma-separated list, lowercased (matched on token.lower_, or "
        "the lemma with --lemmas); default: every token",
    ),
    lemmas: bool = typer.Option(
        False,
        "--lemmas",
        help="Match --words on lemmas and key usages by lemma: the pipeline's lemmatizer, else spaCy's lookup lemmatizer for "
        "its language (pip install 'spacy-elmo[lemmas]'), named in the index",
    ),
    layer: str = typer.Option(
        "top", "--layer", help="The vectors: top, average, a layer number (0 = token layer) or one weight per layer (0.2,0.3,0.5)"
    ),
    all_layers: bool = typer.Option(
        False,
        "--all-layers",
        help="Also keep every layer of each usage and its context-only vectors (what change's verdict and changed usages read), so that "
        "change and neighbours pick the layer at query time",
    ),
    keep_capitals: bool = typer.Option(
        False, "--keep-capitals", help="Let the biLM read sentences set in capitals (headlines) as written, not lowercased"
    ),
    pos: str = typer.Option(
        None, "--pos", help="Only usages of this part of speech (NOUN, VERB, ADJ ...; WUG's attack_nn keeps its own): needs a tagger"
    ),
    grouping: str = typer.Option(None, "--grouping", help="A WUG dataset as CORPUS: only the usages of this grouping (period), e.g. 1"),
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
    neighbours` and `spacy-elmo change`. In a .txt file a blank line ends a document (a line is a
    paragraph of it); in .jsonl each line is a document ({"text": ...}); the pipeline splits documents
    into sentences, and each sentence is one sequence of the biLM. With --words, only the sentences
    that hold one go through the biLM. A WUG dataset's root as CORPUS indexes the usages it marks
    (each target token in its whole context, as the dataset tokenizes it; --grouping for one period),
    filed under the target's lemma with their identifiers. OUTPUT appears complete or not at all;
    files you put in it stay. --shard I/N writes one part of N (`spacy-elmo merge` joins them);
    --ray runs every part on a Ray cluster and merges them."""
    part = parse_shard(shard, ray)
    if ann and not part.whole:
        raise typer.BadParameter(
            "a part's approximate search is never used: build it on the merged index (spacy-elmo index-ann MERGED)", param_hint="--ann"
        )
    if ann:
        from ..usages.ann import faiss_module

        faiss_module()  # before the work: a missing extra is said now
    if docs_per_batch < 1:  # as embed says it
        raise typer.BadParameter(f"{docs_per_batch}: give 1 or more documents per batch", param_hint="--docs-per-batch")
    from ..usages.words import parse_words
    from ..change.wug import is_wug_dataset

    chosen = parse_words(words, keep_pos=True) if words else None  # "attack_nn" keeps its part of speech
    wug = is_wug_dataset(corpus)
    if grouping is not None and not wug:
        raise typer.BadParameter(
            f"{corpus} is not a WUG dataset (data/WORD/uses.csv): --grouping picks a WUG dataset's period", param_hint="--grouping"
        )
    if wug:
        if lemmas:
            raise typer.BadParameter(
                "a WUG dataset's usages are filed under their target's lemma already: leave out --lemmas", param_hint="--lemmas"
            )
        if not part.whole or ray is not None or ann:
            raise typer.BadParameter("a WUG dataset is indexed in one run, without --shard, --ray or --ann", param_hint="CORPUS")
        if pos is not None:
            raise typer.BadParameter("a WUG dataset marks its usages of each target already: leave out --pos", param_hint="--pos")
    settings = {
        "model": bilm_source(model),
        "corpus": str(corpus.resolve()),
        "words": chosen,
        "lemmas": lemmas,
        "pos": pos,
        "layer": layer,
        "all_layers": all_layers,
        "keep_capitals": keep_capitals,
        "lang": lang,
        "docs_per_batch": docs_per_batch,
    }
    if wug:
        from ..pipeline.loading import load_elmo_pipeline
        from ..change.wug import build_wug_index

        use_threads(threads)
        nlp = load_elmo_pipeline(settings["model"], lang)
        build_wug_index(
            nlp,
            corpus,
            output,
            model=settings["model"],
            grouping=grouping,
            words=chosen,
            layer=layer,
            all_layers=all_layers,
            keep_capitals=keep_capitals,
            progress=not quiet,
            log=say(quiet),
        )
        return
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
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it exists (a usage index folder, or a file)"),
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
    layer: str = typer.Option(
        None, "--layer", help="Compare this layer or mix (top, average, a number, weights): an index built with --all-layers picks it now"
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
        index_path,
        sentence,
        word,
        n=n,
        model=model,
        any_word=any_word,
        min_count=min_count,
        exact=exact,
        approximate=approximate,
        layer=layer,
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
    layer: Optional[str] = None,
) -> str:
    """The table that `spacy-elmo neighbours` prints: WORD's first use in SENTENCE against the index (its
    LAYER, where given: see UsageIndex.with_layer)."""
    from ..usages.index import UsageIndex
    from ..usages.report import neighbours_table

    index = UsageIndex().from_disk(index_path)
    if model is not None:
        index.use_model(model)
    if layer is not None:
        index = index.with_layer(layer)
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
        help="The earlier corpus or period: a usage index (index-usages), a corpus or a WUG dataset (both with --model)",
        exists=True,
    ),
    index_b: Path = typer.Argument(
        ..., metavar="B", help="The later one: an index built with the same MODEL and --lemmas, a corpus, or a WUG dataset", exists=True
    ),
    output: Path = typer.Argument(..., help="The table to write: .tsv (its settings beside it in OUTPUT.settings.json), or .json"),
    words: str = typer.Option(
        None,
        "--words",
        "-w",
        help="The target words: a file (one a line) or a comma-separated list; lowercased (default: every word with --min-usages in both)",
    ),
    measure: List[str] = typer.Option(
        ["apd", "prt"],
        "--measure",
        "-m",
        help="apd, prt and/or jsd (repeat the option; jsd: over 8 clusters of the word's usages, at most 10,000 a side "
        "sampled with seed 0); the first orders the rows where there is no verdict (with control words, the verdict's z does)",
    ),
    min_usages: int = typer.Option(
        5,
        "--min-usages",
        help="Fewer usages in either index: listed with a note, never scored (2 at least: the energy distance and the "
        "senses need two usages on each side)",
        min=2,
    ),
    standardize: bool = typer.Option(False, "--standardize", help="Subtract each index's mean usage vector first"),
    layer: str = typer.Option(
        None,
        "--layer",
        help="The vectors compared: top, average, a layer number (0 = token layer) or one weight per layer; an index picks it "
        "at query time where built with --all-layers (default: the index's own, top for corpora and WUG datasets)",
    ),
    model: str = typer.Option(
        None, "--model", help="A or B given as a corpus or WUG dataset: index it with this pipeline, biLM folder or released name first"
    ),
    lemmas: bool = typer.Option(False, "--lemmas", help="A corpus's words matched on lemmas (as index-usages --lemmas)"),
    pos: str = typer.Option(
        None, "--pos", help="A corpus's usages of this part of speech only (NOUN, VERB ...; as index-usages --pos): needs a tagger"
    ),
    groupings: str = typer.Option("1,2", "--groupings", help="A WUG dataset given as A and B: the groupings (periods) of A and of B"),
    gold: Path = typer.Option(
        None,
        "--gold",
        help="People's change: a WUG dataset (its stats and clusters), its stats_groupings.csv, or SemEval-2020 Task 1's truth folder",
        exists=True,
    ),
    report: Path = typer.Option(None, "--report", help="Write the evidence to this folder: index.html (one page, no network) and PNGs"),
    answers: bool = typer.Option(False, "--answers", help="With --report: SemEval-2020 Task 1 answer files in REPORT/answer/task1, task2"),
    clusters: bool = typer.Option(
        False, "--clusters", help="With --report: each word's sense clusters as WUG files, REPORT/clusters/WORD.csv"
    ),
    judgments: bool = typer.Option(
        False,
        "--judgments",
        help="With --report: the model's judgments of usage pairs as a WUG dataset, REPORT/wug/data/WORD/uses.csv and "
        "judgments.csv (the pairs people judged where A or B is a WUG dataset), for the WUG pipeline's clustering and scores",
    ),
    evidence: bool = typer.Option(
        False, "--evidence", help="Also in OUTPUT: each word's senses, changed usages and 95% intervals (--report and --gold imply it)"
    ),
    senses_from: str = typer.Option(
        DEFAULT_SENSES,
        "--senses-from",
        help="What the senses are clustered from: top (the word's own top-layer vectors, the directions that tell its written "
        "forms apart taken out), another layer, context:top (the context-only vectors, blind to the word's spelling; indexes "
        "built with --all-layers), context:LAYER, target (the vectors the scores read as they are), substitutes (the biLM's softmax)",
    ),
    min_silhouette: float = typer.Option(
        0.25,
        "--min-silhouette",
        help="A word is one sense unless its best split into 2-8 senses reaches this mean silhouette",
        callback=lambda value: a_number(value, "--min-silhouette", 0.0, None),
    ),
    permutations: int = typer.Option(
        1000, "--permutations", help="The permutation test of each word's APD and PRT: shuffles of its usages' periods (0: none)", min=0
    ),
    fdr: float = typer.Option(
        0.05,
        "--fdr",
        help="A word is 'changed' where the verdict's Benjamini-Hochberg q-value is at most this",
        callback=lambda value: a_number(value, "--fdr", 0.0, 1.0),
    ),
    controls: int = typer.Option(
        DEFAULT_CONTROLS,
        "--controls",
        help="Control words for the verdict: drawn from the corpora (with --model and --words) or from indexes of every word, "
        "matched to the targets' frequencies and scored alike; a word is changed where it stands above them (0: no verdict, "
        "which needs them)",
        min=0,
    ),
    verdict_from: str = typer.Option(
        "context:top",
        "--verdict-from",
        help="The vectors the verdict's energy distance reads: context:top (the context-only vectors, blind to the word's "
        "spelling; indexes built with --all-layers), another layer spec, or 'scores' (the vectors the scores read)",
    ),
    binary_change: str = typer.Option(
        None,
        "--binary-change",
        help="Binary answers (SemEval's subtask 1: binary_change in OUTPUT, task1 of --answers) where no verdict against control "
        "words is reached: median (the first measure above the targets' median) or senses (a sense came, went or moved); "
        "with control words, the verdict. Without it and without a verdict --answers writes no task1",
    ),
    keep_indexes: Path = typer.Option(
        None,
        "--keep-indexes",
        help="A new folder: keep in it the usage indexes (DIR/A, DIR/B, every layer) of sides given as corpora or WUG datasets, "
        "to compare them again (other senses, layers, measures) without embedding. Given again after an interruption, the "
        "indexes it finished are used and the others built",
    ),
    seed: int = typer.Option(0, "--seed", help="The seed of the senses' clusters, the intervals' resamplings and the permutations", min=0),
    lang: str = typer.Option("en", help="Language of the tokenizer when MODEL holds original files"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it exists"),
    quiet: bool = quiet_option(),
) -> None:
    """Which words changed meaning between two corpora: for each word, its usages in each and how much they
    differ, APD (the mean cosine distance over all pairs of one usage from each, exact), PRT (1 / cosine of the
    two mean usages) and JSD (of the two sides' shares of clusters of the word's usages), ordered by the verdict's z where
    control words give one, else by the first measure
    (Kutuzov & Giulianelli 2020; docs/senses.md). A and B are usage indexes, or corpora that --model indexes
    first (only the --words, where given) into a temporary folder, or a WUG dataset's marked usages (--groupings).
    --report writes the evidence behind each score a person reads: sense clusters and their shares, example and
    changed usages with the target marked, a map of the usages and intervals; --gold checks the scores against people's."""
    from ..progress_bar import progress_bar
    from ..change.measures import MEASURES
    from ..change.outputs import check_outputs
    from ..change.run import ChangeSettings

    bad = [m for m in measure if m not in MEASURES]
    if bad:
        raise typer.BadParameter(f"{', '.join(bad)}: use {', '.join(MEASURES)}", param_hint="--measure")
    if output.suffix not in (".tsv", ".json"):
        raise typer.BadParameter(f"{output.name}: write a .tsv or a .json file", param_hint="OUTPUT")
    if (answers or clusters or judgments) and report is None:
        raise typer.BadParameter("answer and cluster files are written into the report's folder: give --report DIR", param_hint="--answers")
    from ..change.binary import BINARY_RULES

    if binary_change is not None and binary_change not in BINARY_RULES:
        raise typer.BadParameter(f"{binary_change!r}: give {' or '.join(BINARY_RULES)}", param_hint="--binary-change")
    if binary_change == "senses" and not (evidence or report is not None or gold is not None):
        # before the indexing and scoring, not after them
        raise typer.BadParameter(
            "binary change by the senses needs them: give --evidence (or --report, --gold), or --binary-change median",
            param_hint="--binary-change",
        )
    pair = [g.strip() for g in groupings.split(",")]
    if len(pair) != 2 or not all(pair):
        raise typer.BadParameter(f"{groupings!r}: give the groupings of A and of B, e.g. 1,2", param_hint="--groupings")
    inputs = [index_a, index_b] + ([gold] if gold is not None else []) + ([Path(words)] if words and Path(words).is_file() else [])
    check_outputs([output, output.with_suffix(".settings.json") if output.suffix == ".tsv" else None, report, keep_indexes], inputs)
    if keep_indexes is not None and (keep_indexes.is_symlink() or (keep_indexes.exists() and not is_own(keep_indexes, KEPT_INDEXES))):
        raise typer.BadParameter(
            f"{keep_indexes} exists and was not made by --keep-indexes: give a new folder (the indexes are made in it)",
            param_hint="--keep-indexes",
        )
    check_output_file(output, overwrite)
    if output.suffix == ".tsv":
        check_output_file(output.with_suffix(".settings.json"), overwrite)
    if report is not None:
        from ..change.report import CHANGE_REPORT, check_report_files
        from ..output_folders import check_claimable

        check_claimable(report, CHANGE_REPORT, " for the report")  # before the work, not after it
        check_report_files(report)
        from ..output_folders import check_subfolder

        subs = ["maps"] + (["answer", "answer/task1", "answer/task2"] if answers else []) + (["clusters"] if clusters else [])
        for sub in subs + (["wug", "wug/data"] if judgments else []):
            check_subfolder(report, sub)  # a file or link where a subfolder goes: refused before OUTPUT is written

    def progress(items: Iterable[Any], desc: str = "Comparing") -> Iterable[Any]:
        return progress_bar(list(items), desc=desc, unit=" words", disable=True if quiet else None, leave=False)

    settings = ChangeSettings(
        measures=list(measure),
        min_usages=min_usages,
        standardize=standardize,
        layer=layer,
        model=model,
        lemmas=lemmas,
        pos=pos,
        lang=lang,
        groupings=(pair[0], pair[1]),
        evidence=evidence or report is not None,
        seed=seed,
        senses=senses_from,
        min_silhouette=min_silhouette,
        permutations=permutations,
        fdr=fdr,
        controls=controls,
        verdict_from=verdict_from,
        binary_change=binary_change,
        keep_indexes=keep_indexes,
        wug_pairs=judgments,
    )
    change(
        index_a,
        index_b,
        output,
        words,
        settings,
        gold=gold,
        report=report,
        answers=answers,
        clusters=clusters,
        progress=progress,
        quiet=quiet,
        overwrite=overwrite,
    )


def a_number(value: float, name: str, low: Optional[float], high: Optional[float]) -> float:
    """An option's number, refused in one line where it is not a number (NaN) or out of [low, high]."""
    import math

    where = f"from {low:g} to {high:g}" if low is not None and high is not None else f"of at least {low:g}"
    if not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a number: give a number {where}", param_hint=name)
    if (low is not None and value < low) or (high is not None and value > high):
        raise typer.BadParameter(f"{value:g} is out of range: give a number {where}", param_hint=name)
    return value


def change(
    index_a: Path,
    index_b: Path,
    output: Path,
    words: Any = None,
    settings: Any = None,
    *,
    gold: Optional[Path] = None,
    report: Optional[Path] = None,
    answers: bool = False,
    clusters: bool = False,
    progress: Optional[Callable[..., Iterable[Any]]] = None,
    quiet: bool = False,
    overwrite: bool = True,
) -> Any:
    """Write OUTPUT (.tsv or .json): how each word of WORDS (a file, a comma list or a list; default: every word
    with enough usages in both) changed between A and B (usage indexes, corpora or a WUG dataset's groupings),
    with the report, answer and cluster files asked for. RETURNS (ChangeResult): the rows and what was written."""
    from ..change.report import add_report_files, write_report
    from ..change.outputs import write_answers, write_clusters, write_table
    from ..change.run import ChangeSettings, run_change

    import dataclasses
    import warnings

    log = say(quiet)
    settings = settings or ChangeSettings()
    if answers and settings.binary_change is None:  # task1's answers where a verdict gives them; no rule is assumed
        from ..change.binary import VERDICT_ONLY

        settings = dataclasses.replace(settings, binary_change=VERDICT_ONLY)
    with warnings.catch_warnings():  # the notes are said as lines of their own below
        warnings.simplefilter("ignore", UserWarning)
        result = run_change(index_a, index_b, words, settings, gold=gold, progress=progress, log=log, indexing_progress=not quiet)
    for note in result.notes:
        log(f"Note: {note}")
    written = write_table(result, output, overwrite)
    scored = sum(1 for r in result.rows if r.scores)
    log(
        f"Wrote the change of {len(result.rows)} words to {', '.join(map(str, written))} ({scored} scored, "
        f"{len(result.rows) - scored} with too few usages)"
    )
    if "gold" in result.data:
        log(f"Against people ({result.data['gold']['source']}): {result.data['gold']['summary']}")
    if report is not None:
        write_report(report, result.data, log=log)
        if answers:
            files = write_answers(result, Path(report) / "answer", log=log)
            add_report_files(report, files)
            log(f"SemEval-2020 Task 1 answer files: {', '.join(map(str, files))}")
        if clusters:
            files = write_clusters(result, Path(report) / "clusters", log=log)
            add_report_files(report, files)
            log(f"Sense clusters of {len(files)} words: {Path(report) / 'clusters'}")
        if settings.wug_pairs:
            from ..change.wug_export import write_model_wug

            files = write_model_wug(result.data, Path(report) / "wug", log=log)
            add_report_files(report, files)
            log(f"The model's judgments of usage pairs as a WUG dataset ({len(files) // 2} words): {Path(report) / 'wug'}")
    return result
