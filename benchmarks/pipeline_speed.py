"""What a spaCy user weighs: `nlp.pipe` of a task pipeline with ELMo beside the same pipeline without it, both
built from the package's own configs (`{task}_elmo.cfg`, `{task}_baseline.cfg`, identical but for ELMo), in one
run, and where the ELMo pipeline's time goes.

The ELMo rows run the biLM as users run it: its token cache on (the component's default size), each precision and
runtime the component offers; the shared small biLM (`../shared/models/elmo-small-wiki-reuters`, trained weights)
where it is there, else one of the released small size with random weights (the speed does not depend on the weights).
Each row reads the texts once untimed (the token cache fills as in a running service), then BEST_OF timed passes,
its best kept. The texts are SST dev sentences (textcat) or CoNLL-2003 dev sentences (ner), one text each.

    python benchmarks/pipeline_speed.py --task textcat --texts 2000
    python benchmarks/pipeline_speed.py --task ner --rows plain fp32 int8 --profile
"""

import argparse
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

SHARED = Path(__file__).resolve().parents[2] / "shared"
DEFAULT_BILM = SHARED / "models" / "elmo-small-wiki-reuters"
BEST_OF = 2
ROWS = {
    "plain": {},
    "fp32": {"precision": "fp32"},
    "int8": {"precision": "int8"},
    "bf16": {"precision": "bf16"},
    "auto": {"precision": "auto"},
    "onnx-fp32": {"runtime": "onnx", "precision": "fp32"},
    "onnx-int8": {"runtime": "onnx", "precision": "int8"},
}


def read_texts(task: str, n: int) -> List[str]:
    """`n` dev sentences of the task's shared data, as plain text."""
    if task == "textcat":
        import re

        path = SHARED / "data" / "sst" / "dev.txt"
        if not path.is_file():
            raise SystemExit(f"{path} not found: the benchmark reads SST's dev trees (../shared/data/sst)")
        texts = [" ".join(re.findall(r"\(\d ([^()\s]+)\)", line)) for line in path.read_text(encoding="utf8").splitlines() if line]
    else:
        path = SHARED / "data" / "conll2003" / "eng.testa"
        if not path.is_file():
            raise SystemExit(f"{path} not found: the benchmark reads CoNLL-2003's dev file (../shared/data/conll2003)")
        texts, words = [], []
        for line in path.read_text(encoding="utf8").splitlines():
            if not line.strip() or line.startswith("-DOCSTART-"):
                if words:
                    texts.append(" ".join(words))
                words = []
            else:
                words.append(line.split()[0])
    while len(texts) < n:  # fewer sentences than asked: the same again
        texts = texts + texts
    return texts[:n]


def build(task: str, row: str, bilm: Path) -> Any:
    """The task's pipeline from the package's config (ELMo's with the row's settings), initialized on a few labelled
    examples (the weights are random: speed only)."""
    import spacy
    from spacy.training import Example
    from spacy.util import load_model_from_config

    from thinc.api import Config

    from spacy_elmo.configs import task_config
    from spacy_elmo.configs.editing import fill_config_text

    variant = "baseline" if row == "plain" else "elmo"
    text = task_config(task, variant).read_text(encoding="utf8")
    overrides: Dict[str, Any] = {}
    if variant == "elmo":
        if (bilm / "options.json").is_file():
            text = fill_config_text(text, str(bilm.resolve()))
        else:
            overrides["initialize.components.elmo.allow_random"] = True
        overrides.update({f"components.elmo.{k}": v for k, v in ROWS[row].items()})
    config = Config().from_str(text, overrides=overrides)
    nlp = load_model_from_config(config, auto_fill=True)
    blank = spacy.blank("en")
    if task == "textcat":
        examples = [
            Example.from_dict(blank.make_doc(t), {"cats": {"pos": float(i % 2), "neg": float(1 - i % 2)}})
            for i, t in enumerate(["a good film", "a bad film"])
        ]
    else:
        examples = [Example.from_dict(blank.make_doc("Peter went to Paris"), {"entities": [(0, 5, "PER"), (14, 19, "LOC")]})]
    nlp.initialize(lambda: examples)
    return nlp


def tokens_per_s(nlp: Any, texts: List[str], batch_size: int) -> float:
    n_tokens = sum(len(doc) for doc in nlp.pipe(texts, batch_size=batch_size))  # untimed: fills the token cache
    best = float("inf")
    for _ in range(BEST_OF):
        started = time.perf_counter()
        for _doc in nlp.pipe(texts, batch_size=batch_size):
            pass
        best = min(best, time.perf_counter() - started)
    return n_tokens / best


def profile(nlp: Any, texts: List[str], batch_size: int) -> None:
    """Seconds of each component over the texts, and within the elmo component what the biLM's forward takes."""
    from spacy_elmo.bilm import BiLM

    docs = list(nlp.pipe(texts, batch_size=batch_size))  # warm, and the docs the components read
    started = time.perf_counter()
    plain = [nlp.make_doc(t) for t in texts]
    print(f"  tokenizer: {time.perf_counter() - started:.3f} s")
    bilm_seconds = [0.0]
    elmo = nlp.get_pipe("elmo")
    forward: Callable[..., Any] = BiLM.forward

    def timed_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return forward(self, *args, **kwargs)
        finally:
            bilm_seconds[0] += time.perf_counter() - started

    BiLM.forward = timed_forward  # type: ignore[method-assign]
    try:
        for name, component in nlp.pipeline:
            bilm_seconds[0] = 0.0
            started = time.perf_counter()
            for start in range(0, len(texts), batch_size):
                if name == "elmo":  # the component itself, from plain Docs: the layers it sets
                    list(component.pipe(plain[start : start + batch_size], batch_size=batch_size))
                else:  # a listening component reads the layers the full pass set
                    component.predict(docs[start : start + batch_size])
            seconds = time.perf_counter() - started
            inside = f" (the biLM's forward: {bilm_seconds[0]:.3f} s)" if name == "elmo" and elmo.onnx is None else ""
            print(f"  {name}: {seconds:.3f} s{inside}")
    finally:
        BiLM.forward = forward  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=["textcat", "ner"], default="textcat")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=256, help="nlp.pipe's batch size (the configs' [nlp] batch_size)")
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=["plain", "fp32", "int8", "auto", "onnx-fp32", "onnx-int8"])
    parser.add_argument("--bilm", type=Path, default=DEFAULT_BILM, help="a biLM folder (options.json + weights.hdf5)")
    parser.add_argument("--profile", action="store_true", help="also each component's seconds in the ELMo rows")
    args = parser.parse_args()

    import torch

    from spacy_elmo.bilm.precision import cpu_class

    print(f"CPU: {cpu_class().describe()}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    texts = read_texts(args.task, args.texts)
    trained = (args.bilm / "options.json").is_file()  # as `build` reads it
    print(f"{args.task}: {len(texts)} texts; biLM: {args.bilm if trained else 'the released small size, random weights'}")
    rates: Dict[str, float] = {}
    for row in args.rows:
        try:
            nlp = build(args.task, row, args.bilm)
        except Exception as err:  # a row this machine cannot run (no onnxruntime, no bfloat16): said, the rest go on
            print(f"{row:<10} not run: {err}")
            continue
        rates[row] = tokens_per_s(nlp, texts, args.batch_size)
        ratio = f"{rates[row] / rates['plain']:.2f}x plain" if "plain" in rates else ""
        extra = f" (runs {nlp.get_pipe('elmo').precision})" if row == "auto" else ""
        print(f"{row:<10} {rates[row]:>10,.0f} tokens/s  {ratio}{extra}", flush=True)
        if args.profile and row != "plain":
            profile(nlp, texts, args.batch_size)


if __name__ == "__main__":
    main()
