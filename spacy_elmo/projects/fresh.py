"""Delete output folders or files, so that a step starts from scratch when it is rerun."""

import shutil
from pathlib import Path
from typing import List

import typer


def main(paths: List[Path]) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


if __name__ == "__main__":
    typer.run(main)
