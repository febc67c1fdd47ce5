"""The ELMo row's biLM: a ready one, or one pretrained by the project.

    ready_bilm.py FOLDER BILM CMD [ARGS...]

BILM empty: run CMD (the pretraining, which writes FOLDER/model-best). BILM a folder with
options.json + weights.hdf5 (original ELMo format) or a released model's name (`spacy-elmo models`;
downloaded on first use): link its files as FOLDER/model-best, write FOLDER/ready.json naming it (the
results table says so), and skip CMD.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from spacy_elmo.errors import InputError
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
    if best.is_symlink() or best.is_file():
        best.unlink()
    elif best.is_dir():
        shutil.rmtree(best)
    best.mkdir(parents=True, exist_ok=True)
    for path in (source / "options.json", weights):
        (best / ("weights.hdf5" if path == weights else path.name)).symlink_to(path)
    (folder / "log.jsonl").unlink(missing_ok=True)  # a former pretraining's, not this biLM's
    ready.write_text(json.dumps({"bilm": str(source)}), encoding="utf8")
    print(f"{best}: the ready biLM in {source} (no pretraining)")


if __name__ == "__main__":
    main()
