"""Delete a step's own output folders or files, so that it starts from scratch when it is rerun. Only what lies
inside the project folder (the working directory `spacy project run` gives each step) is removed, and never through
a link: a path outside it, or a link (to a folder of yours, say), is refused in one line and left as it is."""

import os
import shutil
import sys
from pathlib import Path
from typing import List

import typer


def main(paths: List[Path]) -> None:
    project = Path.cwd().resolve()
    for path in paths:
        if path.is_symlink():
            sys.exit(f"{path} is a link (to {os.readlink(path)}): it was left as it is; remove the link, then run again")
        if not path.resolve().is_relative_to(project) or path.resolve() == project:
            sys.exit(f"{path} is not inside the project folder {project}: a step removes only its own outputs")
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


if __name__ == "__main__":
    typer.run(main)
