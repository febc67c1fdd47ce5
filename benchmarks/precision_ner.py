"""What the biLM's inference precision does to a task: a trained NER pipeline with an elmo
component scored on its dev set with the biLM's products in float32, bfloat16 and int8, same run.

    python benchmarks/precision_ner.py PIPELINE DEV.spacy
    python benchmarks/precision_ner.py training/ner_elmo/model-best corpus/dev.spacy --precision fp32 int8

Speed and the layers' own error: `benchmarks/bilm_speed.py --precision fp32 bf16 int8`; the
products alone: `benchmarks/matmul_precision.py`.
"""

import argparse
import time
from pathlib import Path

import spacy
from spacy.training import Corpus

from spacy_elmo.pipeline.component import Elmo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline", type=Path, help="a trained pipeline with an elmo component and a ner")
    parser.add_argument("dev", type=Path, help="its dev set (.spacy)")
    parser.add_argument("--precision", nargs="+", default=["fp32", "bf16", "int8"])
    args = parser.parse_args()
    from bilm_speed import cpu_description

    print(f"CPU: {cpu_description()}")
    names = [name for name, pipe in spacy.load(args.pipeline).pipeline if isinstance(pipe, Elmo)]
    for precision in args.precision:
        nlp = spacy.load(args.pipeline, config={"components": {name: {"precision": precision} for name in names}})
        examples = list(Corpus(args.dev)(nlp))  # as spacy train and the projects' evaluate.py read it
        start = time.perf_counter()
        scores = nlp.evaluate(examples)
        seconds = time.perf_counter() - start
        words = sum(len(eg.reference) for eg in examples)
        ran = nlp.get_pipe(names[0]).bilm.precision
        print(
            f"{args.pipeline} on {args.dev}, precision {precision!r}, biLM in {ran}: NER F1 {100 * scores['ents_f']:.2f} "
            f"({words / seconds:,.0f} words/s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
