"""The text of a WUG dataset's usages, for adapting a biLM to it (no labels are read): each usage's context
as the file tokenizes it, one usage a document (blank lines between), words in sorted order.

    python wug_text.py WUG_DIR OUT.txt
"""

from pathlib import Path

import typer

from spacy_elmo.change.wug import read_dataset
from .written import written


def main(wug_dir: Path, out: Path) -> None:
    wug = read_dataset(wug_dir)
    n_uses = n_tokens = 0
    with written(out) as f:
        for word in sorted(wug):
            for use in wug[word][0]:
                f.write(" ".join(use.tokens) + "\n\n")
                n_uses += 1
                n_tokens += len(use.tokens)
    print(f"Wrote {out}: {n_uses:,} usages, {n_tokens:,} tokens")


if __name__ == "__main__":
    typer.run(main)
