from pathlib import Path

import numpy
import pytest

from spacy_elmo.bilm import InputError
import spacy
from thinc.api import Config

from spacy_elmo import load_original, save_original
from spacy_elmo.configs import CONFIG_DIR as CONFIGS, TASKS, task_text
from spacy_elmo.configs.editing import fill_config_text, use_static_vectors

from .helpers import tiny_bilm

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fill_elmo_config(config: Config, model_dir: Path) -> Config:
    return Config().from_str(fill_config_text(config.to_str(interpolate=False), model_dir), interpolate=False)


def test_fill_config_sets_the_bilm_widths_and_paths_of_a_v1_config(tmp_path):
    """A config of the former format (BiLM.v1 + ElmoListener.v1 with [variables])."""
    bilm = tiny_bilm(seed=3, n_layers=1, projection_dim=6)
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    original = Config().from_disk(FIXTURES / "ner_elmo_v1.cfg", interpolate=False)
    config = fill_elmo_config(original, tmp_path)
    model = config["components"]["elmo"]["model"]
    assert (model["cell_dim"], model["projection_dim"], model["n_layers"]) == (24, 6, 1)
    assert model["filters"] == [[1, 4], [2, 8], [3, 8]]
    # runtime settings are the config's, not the biLM's
    assert model["batch_size"] == original["components"]["elmo"]["model"]["batch_size"]
    assert config["variables"] == {"elmo_width": 12, "elmo_layers": 2}
    assert config["paths"]["elmo_weights"] == str(tmp_path / "weights.hdf5")
    assert original["components"]["elmo"]["model"]["cell_dim"] == 1024, "the input config is left as it was"
    _check_it_gives_the_bilms_layers(config.to_str(interpolate=False), tmp_path)


@pytest.mark.parametrize("name", ["ner_elmo.cfg", "textcat_elmo.cfg"])
def test_fill_config_sets_the_bilm_and_paths_and_keeps_the_text(tmp_path, name):
    bilm = tiny_bilm(seed=3, n_layers=1, projection_dim=6)
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    text = (CONFIGS / name).read_text()
    filled = fill_config_text(text, tmp_path)
    before, after = Config().from_str(text, interpolate=False), Config().from_str(filled, interpolate=False)
    model = after["components"]["elmo"]["model"]
    assert (model["cell_dim"], model["projection_dim"], model["n_layers"], model["n_highway"]) == (24, 6, 1, 1)
    assert model["filters"] == [[1, 4], [2, 8], [3, 8]]
    assert model["sequences"] == before["components"]["elmo"]["model"]["sequences"]
    assert after["paths"]["elmo_weights"] == str(tmp_path / "weights.hdf5")
    # Only the biLM's settings and the two paths changed, in place; comments and order stay.
    changed = [(a, b) for a, b in zip(text.splitlines(), filled.splitlines()) if a != b]
    assert len(text.splitlines()) == len(filled.splitlines())
    keys = {a.split("=")[0].strip() for a, _ in changed}
    assert keys == {"cell_dim", "projection_dim", "n_layers", "char_embed_dim", "filters", "elmo_options", "elmo_weights"}
    # The listener's widths follow by interpolation.
    pipe = "ner" if name.startswith("ner") else "textcat"
    listener = Config().from_str(filled)["components"][pipe]["model"]["tok2vec"]["input_elmo"]
    assert (listener["projection_dim"], listener["n_layers"]) == (6, 1)
    _check_it_gives_the_bilms_layers(filled, tmp_path)


def test_fill_config_sets_a_pretraining_configs_bilm(tmp_path):
    save_original(tiny_bilm(seed=3, projection_dim=6), tmp_path / "options.json", tmp_path / "weights.hdf5")
    text = (CONFIGS / "pretrain_cpu.cfg").read_text()
    after = Config().from_str(fill_config_text(text, tmp_path), interpolate=False)
    assert (after["bilm"]["cell_dim"], after["bilm"]["projection_dim"], after["bilm"]["filters"]) == (24, 6, [[1, 4], [2, 8], [3, 8]])
    assert after["paths"]["init_bilm"] == str(tmp_path)
    assert after["training"] == Config().from_str(text, interpolate=False)["training"]


def _check_it_gives_the_bilms_layers(text: str, model_dir: Path) -> None:
    """The filled config builds, initializes and gives the biLM's own layers."""
    nlp = spacy.util.load_model_from_config(Config().from_str(text), auto_fill=True)
    annotations = {"entities": [(0, 1, "X")], "cats": {"POS": 1.0, "NEG": 0.0}}
    nlp.initialize(lambda: [spacy.training.Example.from_dict(nlp.make_doc("A b"), annotations)])
    doc = nlp("Birds sing .")
    expected = load_original(model_dir / "options.json", model_dir / "weights.hdf5").embed([["Birds", "sing", "."]])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)


def test_fill_config_errors_name_the_fix(tmp_path):
    config = Config().from_disk(CONFIGS / "ner_elmo.cfg", interpolate=False)
    # the one message for a path that holds no biLM (spacy_elmo.bilm.folders)
    with pytest.raises(InputError, match="is not a biLM folder.*options.json \\+ weights.hdf5"):
        fill_elmo_config(config, tmp_path)
    save_original(tiny_bilm(), tmp_path / "options.json", tmp_path / "weights.hdf5")
    baseline = Config().from_disk(CONFIGS / "ner_baseline.cfg", interpolate=False)
    with pytest.raises(ValueError, match='factory = "elmo"'):
        fill_elmo_config(baseline, tmp_path)


@pytest.mark.parametrize("vectors", [False, True])
@pytest.mark.parametrize("task", TASKS)
def test_each_elmo_config_is_its_baseline_plus_the_elmo_part(task, vectors, tmp_path):
    """Fairness of every shipped pair, and of the pair with static vectors: remove the elmo
    component, its paths and initialize block, and put spaCy's Tok2Vec back around the same embed
    and encode, and the baseline remains."""

    def read(elmo: bool) -> Config:
        text = task_text(task, "elmo" if elmo else "baseline")
        return Config().from_str(use_static_vectors(text, tmp_path) if vectors else text, interpolate=False)

    elmo, baseline = read(True), read(False)
    del elmo["components"]["elmo"], elmo["initialize"]["components"]["elmo"]
    del elmo["paths"]["elmo_options"], elmo["paths"]["elmo_weights"]
    elmo["nlp"]["pipeline"].remove("elmo")
    # the checks and progress lines of the ELMo part: the listeners' component, the biLM's first pass
    assert elmo["nlp"]["after_pipeline_creation"] == {"@callbacks": "spacy-elmo.check_listeners.v1"}
    elmo["nlp"]["after_pipeline_creation"] = None
    logger = elmo["training"]["logger"]
    assert logger.pop("@loggers") == "spacy-elmo.ConsoleLogger.v1" and logger.pop("every_s") > 0
    logger["@loggers"] = "spacy.ConsoleLogger.v3"
    tok2vec = elmo["components"][task]["model"]["tok2vec"]
    assert tok2vec.pop("@architectures") in ("spacy-elmo.ElmoTok2Vec.v1", "spacy-elmo.ElmoTok2Vec.v2")
    listeners = [tok2vec.pop(key) for key in ("elmo", "input_elmo", "output_elmo") if key in tok2vec]
    assert listeners and all(block["@architectures"] == "spacy-elmo.ElmoListener.v2" for block in listeners)
    tok2vec["@architectures"] = "spacy.Tok2Vec.v2"
    assert elmo == baseline


@pytest.mark.parametrize("task", TASKS)
def test_static_vectors_change_the_embed_and_the_vectors_setting_only(task, tmp_path):
    text = task_text(task, "baseline")
    plain = Config().from_str(text, interpolate=False)
    with_vectors = Config().from_str(use_static_vectors(text, tmp_path / "vectors"), interpolate=False)
    embed = with_vectors["components"][task]["model"]["tok2vec"]["embed"]
    assert embed["include_static_vectors"] is True
    assert with_vectors["paths"]["vectors"] == str(tmp_path / "vectors")
    assert Config().from_str(use_static_vectors(text, tmp_path / "vectors"))["initialize"]["vectors"] == str(tmp_path / "vectors")
    embed["include_static_vectors"] = False
    del with_vectors["paths"]["vectors"]
    with_vectors["initialize"]["vectors"] = None
    assert with_vectors == plain
    assert "# " in use_static_vectors(text, tmp_path)  # comments kept


def test_static_vectors_need_a_multi_hash_embed():
    with pytest.raises(ValueError, match="MultiHashEmbed"):
        use_static_vectors("[paths]\ntrain = null\n", "v")
