"""The package's warnings name the user's own line, whatever path led to them (spacy.load, torch's Module.to, a
pipe call), not a line inside spaCy or PyTorch (issue 105: the bf16 fall-back pointed into torch's module.py)."""

import warnings

import spacy

from spacy_elmo import add_elmo, save_original

from .helpers import tiny_bilm, tiny_model_config


def test_the_precision_fall_back_names_the_users_spacy_load_line(tmp_path, monkeypatch):
    from spacy_elmo.bilm import precision

    folder = tmp_path / "bilm"
    save_original(tiny_bilm(seed=5), folder / "options.json", folder / "weights.hdf5")
    nlp = spacy.blank("en")
    add_elmo(nlp, folder, config={"precision": "bf16"})
    nlp.to_disk(tmp_path / "pipeline")
    real = precision.unavailable_reason
    monkeypatch.setattr(precision, "unavailable_reason", lambda p, d: "no bfloat16 here (a test)" if p == "bf16" else real(p, d))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        spacy.load(tmp_path / "pipeline")  # the line the warning must name
    fall_back = [w for w in said if "no bfloat16 here (a test)" in str(w.message)]
    assert fall_back and all(w.filename == __file__ for w in fall_back), [(w.filename, w.lineno) for w in fall_back]


def test_the_random_weights_warning_names_the_users_line():
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": tiny_model_config()})
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        list(nlp.pipe(["Some text ."]))  # the line the warning must name
    random = [w for w in said if "random weights" in str(w.message)]
    assert random and all(w.filename == __file__ for w in random), [(w.filename, w.lineno) for w in random]
