"""The ELMo row's biLM: a ready one, or one pretrained by the project.

    ready_bilm.py FOLDER BILM CMD [ARGS...]

BILM empty: run CMD (the pretraining, which writes FOLDER/model-best). BILM a folder with
options.json + weights.hdf5 (original ELMo format) or a released model's name (`spacy-elmo models`;
downloaded on first use): link its files as FOLDER/model-best, write FOLDER/ready.json naming it (the
results table says so), and skip CMD.
"""

import json
import subprocess
import sys
from pathlib import Path

from spacy_elmo.errors import InputError
from spacy_elmo.output_folders import write_atomically
from spacy_elmo.released.download import resolve_bilm


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    folder, bilm, cmd = Path(sys.argv[1]), sys.argv[2].strip(), sys.argv[3:]
    ready = folder / "ready.json"
    if not bilm:
        ready.unlink(missing_ok=True)
        sys.exit(subprocess.call(cmd))
    try:
        found = resolve_bilm(bilm)
    except InputError as error:
        sys.exit(f"var bilm = {bilm}: {error}")
    weights = found.weights_file
    if found.format != "allennlp" or weights is None:
        sys.exit(f"var bilm = {bilm}: a {found.format} folder; the project needs options.json + weights.hdf5")
    source = found.path.resolve()
    best = folder / "model-best"
    _check_replaceable(folder, best, ready)
    if best.is_dir() and not best.is_symlink():
        for link in best.iterdir():  # this script's own links (checked above)
            link.unlink()
        best.rmdir()
    best.mkdir(parents=True, exist_ok=True)
    for path in (source / "options.json", weights):
        (best / ("weights.hdf5" if path == weights else path.name)).symlink_to(path)
    write_atomically(ready, json.dumps({"bilm": str(source)}))
    print(f"{best}: the ready biLM in {source} (no pretraining)")


def _check_replaceable(folder: Path, best: Path, ready: Path) -> None:
    """Refuse, in one line and before anything is written, to replace what this script did not make: a pretrained
    FOLDER/model-best (up to an hour of pretraining) or its log. What it replaces: nothing, an empty model-best, or
    the model-best of links that its own ready.json names."""
    own = ready.is_file() and not ready.is_symlink()
    if (folder / "log.jsonl").exists() or (folder / "log.jsonl").is_symlink():
        sys.exit(
            f"{folder / 'log.jsonl'} is a pretraining's log, and {best} its biLM: the ready biLM would replace them. "
            f"Move {folder} away (or give var bilm empty to keep the pretrained one), then run again"
        )
    if best.is_symlink() or best.is_file():
        sys.exit(f"{best} is a link or a file this project did not make: move it away, then run again")
    if best.is_dir():
        entries = list(best.iterdir())
        links_only = all(entry.is_symlink() and entry.name in ("options.json", "weights.hdf5") for entry in entries)
        if entries and not (own and links_only):
            sys.exit(f"{best} holds a biLM this script did not link (a pretrained one, or files put there): move it away, then run again")


if __name__ == "__main__":
    main()
