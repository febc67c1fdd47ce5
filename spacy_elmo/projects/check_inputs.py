"""Check, before any step runs, that the files a workflow reads from its vars exist, and say which --vars to give
where one does not (the defaults assume the repository's layout, with ../shared beside the clone). A released
biLM's name (`spacy-elmo models`) passes where a biLM folder is asked for."""

import sys
from pathlib import Path
from typing import List


def main(args: List[str]) -> int:
    """ARGS: NAME PATH pairs, a var's name and its value."""
    if len(args) % 2:
        print("check_inputs.py: give NAME PATH pairs", file=sys.stderr)
        return 2
    missing = [(name, path) for name, path in zip(args[::2], args[1::2]) if not Path(path).exists() and not _released(path)]
    for name, path in missing:
        print(
            f"var {name}: {path} does not exist (the default assumes this repository's ../shared beside the clone): "
            f"give yours with --vars.{name} PATH, or once for every run: set it in project.yml's vars, or "
            f"export WEASEL_CONFIG_OVERRIDES='--vars.{name} PATH'",
            file=sys.stderr,
        )
    return 1 if missing else 0


def _released(value: str) -> bool:
    """Whether VALUE names a released biLM (`spacy-elmo models`), which a biLM var may give instead of a folder."""
    from spacy_elmo.released.catalogue import CATALOGUE

    return value in CATALOGUE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
