"""Every bash and python block of README.md and docs/*.md runs as printed.

Each page runs in its own folder holding the files a user brings (a corpus, held-out text, DocBins, a biLM
folder, an ELMoForManyLangs folder), with released names served by a local mirror into a fresh cache. Only
the budgets are cut (steps instead of minutes); lines that need what a test cannot have are skipped, each
with the place that covers it.
"""

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import List, Tuple

import pytest

from spacy_elmo.bilm import save_original

from .helpers import tiny_bilm, write_ner_docbins
from .released.mirror_server import MirrorServer
from .change.test_wug_route import write_wug

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EFML = ROOT / "tests" / "fixtures" / "elmoformanylangs" / "model"
TF_HUB = ROOT / "tests" / "fixtures" / "tf" / "tfhub"

SKIPPED = {
    "pip install": "the set-up itself: .ci/run installs as README says",
    "python3 -m venv": "the set-up itself: .ci/run runs it",
    "--gpu-id 0": "needs CUDA: tests/gpu",
    "torchrun ": "several processes: tests/training/test_distributed.py and test_two_nodes.py",
    "--ray ": "a Ray cluster: tests/distributed/test_ray.py",
    "spacy project run": "whole workflows: tests/test_projects.py runs each project's smoke workflow",
    "npm install": "Node.js: .ci/run installs the example's package, tests/bilm_onnx/test_runtime.py runs it",
    "node embed.js": "Node.js: tests/bilm_onnx/test_runtime.py",
}
# (printed, run): budgets in minutes or hundreds of steps become a few steps
SHORTER = [
    ("--training.max_minutes 60", "--training.max_minutes 0 --training.max_steps 4 --training.eval_every 2"),
    ("--resume", "--resume --training.max_minutes 0 --training.max_steps 6 --training.eval_every 2"),
    ("--system.threads 1", "--system.threads 1 --training.max_minutes 0 --training.max_steps 2"),
    ("--training.softmax_warmup_steps 400", "--training.softmax_warmup_steps 2"),
    ("--n-process 8", "--n-process 2"),
]
SPACY_TRAIN = " --training.max_steps 4 --training.eval_frequency 2"

WORDS = ["suit", "bank", "play", "court", "river", "game"]
SENTENCES = [
    "The company filed a {} against its former chief executive .",
    "He wore a dark {} to the wedding .",
    "They walked along the {} of the river in the morning .",
    "The central {} raised interest rates again .",
    "She wrote a {} about the war .",
]


def _blocks(page: Path) -> List[Tuple[str, str]]:
    return re.findall(r"```(bash|python)\n(.*?)```", page.read_text(encoding="utf8"), flags=re.S)


def _commands(block: str) -> List[str]:
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = [line.split("  #")[0].split(" # ")[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _user_files(folder: Path) -> None:
    """What the examples take as the user's own files."""
    text = [template.format(word) for word in WORDS for template in SENTENCES] * 10
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "text.txt").write_text("\n\n".join(text) + "\n", encoding="utf8")
    with gzip.open(folder / "corpus.txt.gz", "wt", encoding="utf8") as f:
        f.write("\n\n".join(text) + "\n")
    (folder / "held_out.txt").write_text("\n".join(text[:20]) + "\n", encoding="utf8")
    (folder / "sentences.txt").write_text("The bank is closed .\nA suit .\n", encoding="utf8")
    save_original(tiny_bilm(seed=5), folder / "options.json", folder / "weights.hdf5")
    shutil.copytree(EFML, folder / "de.model")
    write_wug(folder / "dwug_en")  # a dataset of usages judged by people, in the WUG format
    # CoNLL-2003 as it comes (docs/tasks.md converts it), and JSONL with entity offsets and categories
    conll = ["-DOCSTART- -X- -X- O", ""]
    for i in range(12):
        conll += [
            "Alice NNP B-NP B-PER",
            "Smith NNP I-NP I-PER",
            "went VBD B-VP O",
            "to TO B-PP O",
            "Paris NNP B-NP B-LOC",
            f"{i} CD B-NP O",
            ". . O O",
            "",
        ]
    (folder / "eng.train").write_text("\n".join(conll), encoding="utf8")
    (folder / "eng.testa").write_text("\n".join(conll[: 2 + 8 * 4]), encoding="utf8")
    for split, size in (("train", 20), ("dev", 5)):
        records = [
            {"text": f"Alice Smith went to Paris on day {i} .", "entities": [[0, 11, "PERSON"], [20, 25, "GPE"]], "cats": {"TRAVEL": 1.0}}
            for i in range(size)
        ]
        (folder / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf8")
    write_ner_docbins(folder, {"train.spacy": 40, "dev.spacy": 10})
    # the Stanford Sentiment Treebank as it comes (PTB trees, one a line; docs/tasks.md converts it)
    (folder / "sst").mkdir()
    trees = "(3 (2 A) (4 (4 lovely) (2 film)))\n(1 (2 A) (0 (0 dreadful) (2 film)))\n(2 (2 It) (2 exists))\n"
    for split in ("train", "dev"):
        (folder / "sst" / f"{split}.txt").write_text(trees, encoding="utf8")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    (root / "small").mkdir()
    save_original(tiny_bilm(seed=3), root / "small" / "options.json", root / "small" / "weights.hdf5")
    (root / "efml-de").mkdir()
    with zipfile.ZipFile(root / "efml-de" / "model.zip", "w") as archive:
        for path in EFML.iterdir():
            archive.write(path, f"de.model/{path.name}")
    (root / "tfhub-elmo-3").mkdir()
    with tarfile.open(root / "tfhub-elmo-3" / "model.tar.gz", "w:gz") as archive:
        archive.add(TF_HUB / "variables", "variables")
    server = MirrorServer(root)
    yield server
    server.close()


WITH_EXAMPLES = [page for page in PAGES if _blocks(page)]


def test_the_front_page_and_the_guide_have_examples():
    assert {"README.md", "component.md", "models.md", "pretraining.md", "senses.md", "tasks.md"} <= {p.name for p in WITH_EXAMPLES}


@pytest.mark.slow
@pytest.mark.parametrize("page", WITH_EXAMPLES, ids=[p.name for p in WITH_EXAMPLES])
def test_every_example_runs_as_printed(page, mirror, tmp_path):
    blocks = _blocks(page)
    folder = tmp_path / "user"
    _user_files(folder)
    env = dict(os.environ)
    env.update(
        SPACY_ELMO_CACHE=str(tmp_path / "cache"),
        SPACY_ELMO_MIRROR=mirror.url,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        OMP_NUM_THREADS="1",
    )
    ran = 0
    for language, block in blocks:
        if language == "python":
            run = subprocess.run([sys.executable, "-c", block], cwd=folder, env=env, capture_output=True, text=True)
            assert run.returncode == 0, f"{page.name}, python block:\n{block}\n{run.stderr[-3000:]}"
            ran += 1
            continue
        for command in _commands(block):
            if any(marker in command for marker in SKIPPED):
                continue
            for printed, shorter in SHORTER:
                command = command.replace(printed, shorter)
            if command.startswith("spacy train"):
                command += SPACY_TRAIN
            run = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True)
            assert run.returncode == 0, f"{page.name}: {command}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
            ran += 1
    assert ran
