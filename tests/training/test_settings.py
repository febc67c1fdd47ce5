"""The pretraining config read once: PretrainSettings fills, types and checks every setting in one
place, and names every bad one in one message before a run touches its output folder."""

import pytest
from confection import Config
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.training.settings import DEFAULTS, PretrainSettings


def test_defaults_fill_every_section_with_typed_values():
    settings = PretrainSettings.from_config(Config({"paths": {"train": "corpus.txt"}}))
    defaults = Config().from_str(DEFAULTS)
    assert settings.training.max_minutes == float(defaults["training"]["max_minutes"])
    assert settings.softmax.cutoffs == tuple(defaults["softmax"]["cutoffs"])
    assert settings.system.gpu_id is None and settings.paths.dev is None
    assert settings.config["training"]["learn_rate"] == settings.training.learn_rate


def test_every_bad_setting_is_named_in_one_message():
    bad = {
        "paths": {"train": "x"},
        "training": {"dropout": 1.5, "optimizer": "sgd", "log_every": 0},
        "softmax": {"cutoffs": [10, 5]},
        "vocab": {"max_size": 2},
        "system": {"processes": 0, "threads": -1},
    }
    with pytest.raises(InputError) as info:
        PretrainSettings.from_config(Config(bad))
    message = str(info.value)
    parts = ("[training] dropout", "[training] optimizer", "[training] log_every", "[softmax] cutoffs", "[vocab] max_size")
    for part in parts + ("[system] processes", "[system] threads"):
        assert part in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "section, key, value, expected",
    [
        ("training", "max_steps", "ten", "an integer"),
        ("training", "learn_rate", float("nan"), "a finite number"),
        ("system", "reuse_freed_memory", 1, "true or false"),
        ("corpus", "lang", 7, "a string"),
    ],
)
def test_types_are_checked(section, key, value, expected):
    with pytest.raises(InputError, match=rf"\[{section}\] {key} must be {expected}"):
        PretrainSettings.from_config(Config({"paths": {"train": "x"}, section: {key: value}}))


def test_the_training_text_is_required_once():
    with pytest.raises(InputError, match=r"\[paths\] train must name the training text"):
        PretrainSettings.from_config(Config({}))


def test_pretrain_refuses_bad_settings_before_touching_the_output(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["pretrain", "cpu", "--output", str(out), "--paths.train", str(tmp_path), "--training.dropout", "2"])
    assert result.exit_code != 0 and "dropout must be in [0, 1)" in " ".join(result.output.replace("│", " ").split())
    assert not out.exists()


@pytest.mark.parametrize("preset", ["cpu", "small", "original"])
def test_presets_leave_threads_to_the_environment(preset):
    """OMP_NUM_THREADS=1 spacy-elmo pretrain cpu ... must run on one thread: no preset sets [system] threads."""
    from spacy_elmo.configs import pretrain_config

    config = Config().from_disk(pretrain_config(preset))
    config["paths"]["train"] = "text.txt"
    assert PretrainSettings.from_config(config).system.threads == 0


def test_the_default_threads_leave_the_cores_busy_with_other_work(monkeypatch):
    from spacy_elmo import machine_load
    from spacy_elmo.bilm import threads

    # the rule lives in machine_load (torch-free, shared with the ONNX runtime); bilm.threads re-exports it
    monkeypatch.setattr(machine_load, "usable_cores", lambda: 2)
    monkeypatch.setattr(machine_load, "busy_cores", lambda: 0)
    assert threads.default_threads() == (2, "") and threads.default_threads(2)[0] == 1
    monkeypatch.setattr(machine_load, "busy_cores", lambda: 1)
    count, why = threads.default_threads()
    assert count == 1 and "1 of the 2 cores are busy with other work" in why and "--system.threads N" in why
    assert threads.default_threads(count_busy=False) == (2, "")  # torchrun's own processes are not other work
    monkeypatch.setattr(machine_load, "busy_cores", lambda: 7)
    assert threads.default_threads()[0] == 1  # never none
