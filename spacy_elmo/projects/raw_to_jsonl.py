"""Write raw text (plain or .gz; one paragraph per line) as JSONL for `spacy pretrain`."""

import gzip
import itertools
from pathlib import Path
from typing import List

import typer
from .written import write_jsonl


def main(output: Path, inputs: List[Path], limit: int = typer.Option(0, help="Keep the first LIMIT lines (0: all)")) -> None:
    """Write each non-blank line of INPUTS as {"text": line} to OUTPUT."""

    def records():
        for path in inputs:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf8") as file_:
                for line in file_:
                    line = line.strip()
                    if line:
                        yield {"text": line}

    output.parent.mkdir(parents=True, exist_ok=True)
    lines = records()
    write_jsonl(output, itertools.islice(lines, limit) if limit else lines)


if __name__ == "__main__":
    typer.run(main)
