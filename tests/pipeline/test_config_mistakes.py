"""A spaCy user's config mistakes, each said in one line by `spacy train` (no traceback) or warned about at
initialize: a wrong biLM path, a listener with no elmo component before it, an elmo component nobody listens to; and
progress lines from the first step while the biLM reads text it has not cached."""

import subprocess
import sys
import warnings

import pytest
import spacy
from spacy.training import Example

from spacy_elmo import add_elmo
from spacy_elmo.bilm import save_original
from spacy_elmo.errors import InputError

from ..helpers import tiny_bilm, write_ner_docbins


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A biLM folder, train.spacy and dev.spacy, and the NER config init-config writes for that biLM."""
    folder = tmp_path_factory.mktemp("user")
    save_original(tiny_bilm(seed=5), folder / "bilm" / "options.json", folder / "bilm" / "weights.hdf5")
    write_ner_docbins(folder, {"train.spacy": 12, "dev.spacy": 4}, first={"dev.spacy": 100})
    run = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "init-config", "ner.cfg", "--pipeline", "ner", "--bilm", "bilm"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    return folder


def _train(folder, config, *overrides):
    args = [sys.executable, "-m", "spacy", "train", config, "--paths.train", "train.spacy", "--paths.dev", "dev.spacy"]
    args += ["--training.max_steps", "4", "--training.eval_frequency", "2", *overrides]
    return subprocess.run(args, cwd=folder, capture_output=True, text=True)


def _said_in_one_line(run):
    out = run.stdout + run.stderr
    failed = [line for line in out.splitlines() if "✘" in line]
    return run.returncode == 1 and "Traceback" not in out and len(failed) == 1, " ".join(out.split())  # wrapped by the console


@pytest.mark.parametrize("override", [["--paths.elmo_weights", "/nowhere/weights.hdf5"], ["--paths.elmo_options", "/nowhere/options.json"]])
@pytest.mark.slow
def test_a_wrong_bilm_path_in_spacy_train_is_one_line_that_says_what_to_give(user, override):
    run = _train(user, "ner.cfg", *override)
    ok, out = _said_in_one_line(run)
    assert ok, out
    assert "/nowhere/" in out and "--paths.elmo_" in out


@pytest.mark.slow
def test_a_listener_without_an_elmo_component_is_one_line_naming_it(user):
    text = (user / "ner.cfg").read_text(encoding="utf8").replace('pipeline = ["elmo", "ner"]', 'pipeline = ["ner"]')
    (user / "no_elmo.cfg").write_text(text, encoding="utf8")
    run = _train(user, "no_elmo.cfg")
    ok, out = _said_in_one_line(run)
    assert ok, out
    assert "[ner] listens to the 'elmo' component" in out and "put 'elmo' in [nlp] pipeline before 'ner'" in out and "--baseline" in out


@pytest.mark.slow
def test_a_disabled_elmo_component_is_said_to_be_disabled_not_missing(user):
    """The audit's case (issue 103): `spacy train ... --nlp.disabled '["elmo"]'` said elmo was missing from the
    pipeline; it is there, disabled."""
    run = _train(user, "ner.cfg", "--nlp.disabled", '["elmo"]')
    ok, out = _said_in_one_line(run)
    assert ok, out
    assert "'elmo' is in the pipeline but disabled" in out and "put 'elmo' in [nlp] pipeline" not in out


@pytest.mark.slow
def test_an_elmo_component_nobody_listens_to_is_warned_about_at_initialize(user):
    nlp = spacy.blank("en")
    add_elmo(nlp, str(user / "bilm"))
    nlp.add_pipe("ner")  # its own tok2vec: the biLM would run for nothing
    doc = nlp.make_doc("Alice Smith went to Paris .")
    examples = [Example.from_dict(doc, {"entities": [(0, 11, "PERSON")]})]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        nlp.initialize(lambda: examples)
    lines = [str(w.message) for w in said if "no component listens" in str(w.message)]
    assert len(lines) == 1 and "ner could use its layers" in lines[0] and "init-config" in lines[0]


def test_an_elmo_component_alone_is_as_meant_and_not_warned_about(user):
    nlp = spacy.blank("en")
    add_elmo(nlp, str(user / "bilm"))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        nlp.initialize()
    assert not [w for w in said if "no component listens" in str(w.message)]


def test_a_wrong_bilm_in_python_is_still_an_input_error(user):
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo")
    with pytest.raises(InputError, match="not found"):
        elmo.initialize(lambda: [], nlp=nlp, weights_file=str(user / "none.hdf5"))


@pytest.mark.slow
def test_training_says_its_progress_before_the_first_row(user):
    run = _train(user, "ner.cfg", "--training.logger.every_s", "0.000001")
    out = run.stdout
    assert run.returncode == 0, run.stdout + run.stderr
    first_row = next(i for i, line in enumerate(out.splitlines()) if line.split()[:2] == ["0", "0"])
    before = out.splitlines()[:first_row]
    assert any("The first row comes after step 0" in line for line in before)
    assert any("the biLM has read" in line for line in out.splitlines())
