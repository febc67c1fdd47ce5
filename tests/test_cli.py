import h5py
import json
import numpy
import pytest
import spacy
from spacy.tokens import DocBin
from thinc.api import Config
from typer.testing import CliRunner

from spacy_elmo import load_original, save_original
from spacy_elmo.cli import app

from .helpers import tiny_bilm


@pytest.mark.slow
def test_embed_from_original_files_to_hdf5_and_docbin(tmp_path):
    """Dataset "i" is line i, the blank line included (an empty dataset), as allennlp elmo numbers
    lines; a "\r" inside a line neither splits it nor shifts the numbering."""
    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "in.txt").write_bytes("The cat sat.\n\nZürich 🙂 is nice.\nA\rB\r\n".encode("utf8"))
    runner = CliRunner()
    result = runner.invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--no-sentences"])
    assert result.exit_code == 0, result.output
    assert "4 documents" in result.output
    bilm = load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")
    tokenizer = spacy.blank("en").tokenizer
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        index = json.loads(f["sentence_to_index"][0])
        assert index == {"The cat sat.": "0", "": "1", "Zürich 🙂 is nice.": "2", "A\rB": "3"}
        assert f["1"].shape == (3, 0, 16)
        for text, key in index.items():
            words = [t.text for t in tokenizer(text)]
            if words:
                numpy.testing.assert_allclose(f[key][()], bilm.embed([words])[0], atol=1e-5)
    result = runner.invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "out.spacy"), "--dtype", "float16"])
    assert result.exit_code == 0, result.output
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")  # registers the extensions
    docs = list(DocBin().from_disk(tmp_path / "out.spacy").get_docs(nlp.vocab))
    assert [d.text for d in docs] == ["The cat sat.", "", "Zürich 🙂 is nice.", "A\rB"]
    assert docs[2]._.elmo.layers.dtype == numpy.float16
    assert docs[2]._.elmo.layers.shape == (3, len(docs[2]), 16)


def test_embed_explains_a_wrong_model_folder(tmp_path):
    (tmp_path / "in.txt").write_text("text\n")
    result = CliRunner().invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5")])
    assert result.exit_code != 0
    assert "options.json" in result.output


def test_embed_gpu_id_without_a_gpu_says_how_to_run_on_cpu(tmp_path):
    from thinc.api import get_current_ops, set_current_ops

    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "in.txt").write_text("text\n")
    ops = get_current_ops()
    try:
        result = CliRunner().invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5"), "--gpu-id", "0"])
    finally:
        set_current_ops(ops)
    if result.exit_code == 0:  # a machine with cupy and a GPU: the run must have worked
        assert (tmp_path / "o.hdf5").exists()
    else:
        assert "--gpu-id -1" in result.output
        assert not (tmp_path / "o.hdf5").exists()


@pytest.mark.slow
def test_embed_top_average_and_pretokenized_like_allennlp(tmp_path):
    """allennlp elmo's layout: dataset "i" per line, (n_tokens, 2P) for --top / --average, and
    sentence_to_index; pretokenized lines keep exactly their whitespace tokens."""
    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    lines = ["U.S. stocks rose 5 % ( a record ) .", "Zürich 🙂 isn't far"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    bilm = load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")
    expected = [bilm.embed([line.split()])[0] for line in lines]
    runner = CliRunner()
    for flag, reduce in [("--all", lambda x: x), ("--top", lambda x: x[-1]), ("--average", lambda x: x.mean(0))]:
        out = tmp_path / f"{flag[2:]}.hdf5"
        result = runner.invoke(
            app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(out), flag, "--pretokenized", "--docs-per-batch", "1"]
        )
        assert result.exit_code == 0, result.output
        with h5py.File(out, "r") as f:
            assert set(f.keys()) == {"0", "1", "sentence_to_index"}
            assert json.loads(f["sentence_to_index"][0]) == {line: str(i) for i, line in enumerate(lines)}
            for i in range(2):
                assert f[str(i)].shape == reduce(expected[i]).shape
                assert f[str(i)].shape[-2] == len(lines[i].split())
                numpy.testing.assert_allclose(f[str(i)][()], reduce(expected[i]), atol=1e-5)
    result = runner.invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5"), "--top", "--average"])
    assert result.exit_code != 0 and "one of --all" in result.output


def test_help_names_every_command():
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("pretrain", "perplexity", "prepare-corpus", "init-config", "fill-config", "embed", "inspect"):
        assert command in result.output
    result = CliRunner().invoke(app, ["fill-config", "--help"])
    assert "[paths]" in result.output


def test_command_list_reflows_docstrings_to_the_terminal():
    """Docstrings are wrapped at the source's width; the command list rewraps them, so a wide
    terminal shows embed's sentence that the source breaks after "or an" on one line."""
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert any("or an HDF5 file" in line for line in result.output.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("task", ["ner", "textcat", "tagger", "parser"])
def test_init_config_writes_a_config_that_builds(task, tmp_path):
    """With --bilm the ELMo config carries the biLM's sizes and files; --baseline is the same
    config less the ELMo part."""
    folder = tmp_path / "bilm"
    save_original(tiny_bilm(), folder / "options.json", folder / "weights.hdf5")
    runner = CliRunner()
    result = runner.invoke(app, ["init-config", str(tmp_path / "elmo.cfg"), "--pipeline", task, "--bilm", str(folder)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["init-config", str(tmp_path / "base.cfg"), "--pipeline", task, "--baseline"])
    assert result.exit_code == 0, result.output
    elmo_cfg = Config().from_disk(tmp_path / "elmo.cfg")
    assert elmo_cfg["components"]["elmo"]["model"]["cell_dim"] == 24
    assert elmo_cfg["paths"]["elmo_weights"] == str(folder / "weights.hdf5")
    nlp = spacy.util.load_model_from_config(elmo_cfg, auto_fill=True)
    assert nlp.pipe_names == ["elmo", task]
    base = spacy.util.load_model_from_config(Config().from_disk(tmp_path / "base.cfg"), auto_fill=True)
    assert base.pipe_names == [task]
    result = runner.invoke(app, ["init-config", str(tmp_path / "x.cfg"), "--pipeline", "lemmatizer"])
    assert result.exit_code != 0 and "tagger" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("task", ["ner", "textcat"])
def test_init_config_elmo_at_moves_the_listener_and_changes_nothing_else(task, tmp_path):
    """--elmo-at output / both: the shipped config with ElmoTok2Vec.v2, the listener block (and
    its mix) moved or doubled as it was; it builds, and the tok2vec is as wide as the paper's
    [h_k; ELMo_k]."""
    folder = tmp_path / "bilm"
    save_original(tiny_bilm(), folder / "options.json", folder / "weights.hdf5")
    runner = CliRunner()
    configs = {}
    for place in ("input", "output", "both"):
        out = tmp_path / f"{place}.cfg"
        result = runner.invoke(app, ["init-config", str(out), "--pipeline", task, "--bilm", str(folder), "--elmo-at", place])
        assert result.exit_code == 0, result.output
        configs[place] = Config().from_disk(out, interpolate=False)
    shipped = configs["input"]["components"][task]["model"].pop("tok2vec")
    listener = shipped.pop("input_elmo")
    for place, keys in (("output", ["output_elmo"]), ("both", ["input_elmo", "output_elmo"])):
        tok2vec = configs[place]["components"][task]["model"].pop("tok2vec")
        assert tok2vec.pop("@architectures") == "spacy-elmo.ElmoTok2Vec.v2"
        assert [k for k in tok2vec if k.endswith("elmo")] == keys
        assert all(tok2vec.pop(key) == listener for key in keys)
        assert tok2vec == {k: v for k, v in shipped.items() if k != "@architectures"}
        assert configs[place] == configs["input"]
        nlp = spacy.util.load_model_from_config(Config().from_disk(tmp_path / f"{place}.cfg"), auto_fill=True)
        model = next(n for n in nlp.get_pipe(task).model.walk() if n.has_ref("output_listener"))
        assert model.get_dim("nO") == 96 + 2 * 8  # the encoder's width + the tiny biLM's 2P
        assert len(nlp.get_pipe("elmo").listeners) == len(keys)
    result = runner.invoke(app, ["init-config", str(tmp_path / "x.cfg"), "--elmo-at", "middle"])
    assert result.exit_code != 0 and "both" in result.output


@pytest.mark.slow
def test_spacy_init_elmo_config_is_the_same_command(tmp_path):
    """Registered under spaCy's own CLI through the spacy_cli entry point."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "spacy", "init", "elmo-config", str(tmp_path / "t.cfg"), "--pipeline", "tagger"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    from spacy_elmo.configs import task_config

    assert (tmp_path / "t.cfg").read_text() == task_config("tagger").read_text()


@pytest.mark.slow
def test_generated_configs_pass_spacy_debug_config(tmp_path):
    """Every config init-config writes (with ELMo, each placement, and the baseline) passes
    spaCy's own validation, as `spacy init config`'s do."""
    from spacy.cli.debug_config import debug_config
    from spacy.tokens import DocBin

    folder = tmp_path / "bilm"
    save_original(tiny_bilm(), folder / "options.json", folder / "weights.hdf5")
    DocBin().to_disk(tmp_path / "empty.spacy")
    paths = {"paths.train": str(tmp_path / "empty.spacy"), "paths.dev": str(tmp_path / "empty.spacy")}
    runner = CliRunner()
    for task in ("ner", "textcat", "tagger", "parser"):
        for extra in (["--baseline"], ["--bilm", str(folder)], ["--bilm", str(folder), "--elmo-at", "both"]):
            out = tmp_path / f"{task}{len(extra)}.cfg"
            assert runner.invoke(app, ["init-config", str(out), "--pipeline", task, *extra]).exit_code == 0
            try:
                debug_config(out, overrides=paths)
            except SystemExit as exit:  # wasabi's msg.fail(exits=1)
                pytest.fail(f"spacy debug config rejects {out.name} ({' '.join(extra)}): exit {exit.code}")


def test_init_config_writes_absolute_paths_and_refuses_bilm_with_baseline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_original(tiny_bilm(), tmp_path / "bilm" / "options.json", tmp_path / "bilm" / "weights.hdf5")
    runner = CliRunner()
    assert runner.invoke(app, ["init-config", "ner.cfg", "--bilm", "bilm"]).exit_code == 0
    cfg = Config().from_disk(tmp_path / "ner.cfg", interpolate=False)
    assert cfg["paths"]["elmo_weights"] == str(tmp_path.resolve() / "bilm" / "weights.hdf5")
    assert runner.invoke(app, ["fill-config", "ner.cfg", "bilm", "filled.cfg"]).exit_code == 0
    assert Config().from_disk(tmp_path / "filled.cfg", interpolate=False)["paths"]["elmo_options"] == str(
        tmp_path.resolve() / "bilm" / "options.json"
    )
    result = runner.invoke(app, ["init-config", "b.cfg", "--baseline", "--bilm", "bilm"])
    assert result.exit_code != 0 and "not both" in result.output and not (tmp_path / "b.cfg").exists()


@pytest.mark.parametrize("command", ["init-config", "fill-config", "embed"])
def test_an_existing_output_file_is_replaced_only_with_overwrite(command, tmp_path):
    save_original(tiny_bilm(), tmp_path / "bilm" / "options.json", tmp_path / "bilm" / "weights.hdf5")
    (tmp_path / "in.txt").write_text("The cat sat .\n", encoding="utf8")
    from spacy_elmo.configs import task_config

    out, args = {
        "init-config": (tmp_path / "x.cfg", []),
        "fill-config": (tmp_path / "x.cfg", [str(task_config("ner")), str(tmp_path / "bilm")]),
        "embed": (tmp_path / "x.hdf5", [str(tmp_path / "bilm"), str(tmp_path / "in.txt")]),
    }[command]
    out.write_text("mine")
    result = CliRunner().invoke(app, [command, *args, str(out)])
    assert result.exit_code == 1 and "--overwrite" in result.output
    assert out.read_text() == "mine"
    result = CliRunner().invoke(app, [command, *args, str(out), "--overwrite"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() != b"mine"


def test_help_lists_commands_in_workflow_order_and_flags_without_a_type():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    order = ["prepare-corpus", "pretrain", "perplexity", "init-config", "fill-config", "embed", "inspect"]
    listed = [line.split()[1] for line in result.output.splitlines() if line.startswith("│ ") and line.split()[1] in order]
    assert listed == order
    result = CliRunner().invoke(app, ["embed", "--help"], env={"COLUMNS": "200"})
    for flag in ("--top", "--average", "--pretokenized", "--overwrite"):
        line = next(line for line in result.output.splitlines() if f" {flag} " in line)
        assert "<bool>" not in line, line
    result = CliRunner().invoke(app, ["init-config", "--help"], env={"COLUMNS": "200"})
    assert "spacy train CONFIG" in result.output and "spacy train OUTPUT" not in result.output
    embed_help = CliRunner().invoke(app, ["embed", "--help"], env={"COLUMNS": "200"}).output
    usage = next(line for line in embed_help.splitlines() if "Usage:" in line)
    assert "{MODEL} {INPUT} {OUTPUT}" in usage, usage  # as README and docs write it
    help_line = next(line for line in result.output.splitlines() if " --help " in line)
    assert "<bool>" not in help_line, help_line


@pytest.mark.slow
def test_every_error_is_one_line_on_stderr(tmp_path):
    """A command-line mistake (missing argument, unknown option or command) reads like a bad file: one line
    starting 'Error:', exit status non-zero, nothing boxed."""
    import subprocess
    import sys

    runs = {
        "missing argument": ["embed"],
        "unknown option": ["embed", "a", "b", "c", "--bogus"],
        "unknown command": ["bogus"],
        "bad file": ["embed", str(tmp_path / "nosuch"), str(tmp_path), str(tmp_path / "out.hdf5")],
    }
    for what, args in runs.items():
        run = subprocess.run([sys.executable, "-m", "spacy_elmo", *args], capture_output=True, text=True)
        lines = run.stderr.strip().splitlines()
        assert run.returncode != 0 and len(lines) == 1 and lines[0].startswith("Error: "), (what, run.stderr)
        assert "╭" not in run.stderr + run.stdout, what


def test_embed_takes_precision_auto_and_names_the_choices(tmp_path):
    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "in.txt").write_text("The cat sat.\n", encoding="utf8")
    runner = CliRunner()
    result = runner.invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--precision", "auto"])
    assert result.exit_code == 0, result.output
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        assert f["0"].shape == (3, 4, 16)
    result = runner.invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "o2.hdf5"), "--precision", "fp16"])
    assert result.exit_code != 0 and "fp32, bf16, int8, auto" in result.output


@pytest.mark.slow
def test_init_config_sets_the_pipelines_language(tmp_path, monkeypatch):
    """--lang sets [nlp] lang (a German config must not train with the English tokenizer); a
    released biLM's name gives its own language; an unknown language is refused before writing."""
    from spacy_elmo.cli import _pipeline_lang

    monkeypatch.chdir(tmp_path)
    save_original(tiny_bilm(), tmp_path / "bilm" / "options.json", tmp_path / "bilm" / "weights.hdf5")
    runner = CliRunner()
    result = runner.invoke(app, ["init-config", "de.cfg", "--bilm", "bilm", "--lang", "de"])
    assert result.exit_code == 0 and "lang = de" in result.output
    nlp = spacy.util.load_model_from_config(Config().from_disk(tmp_path / "de.cfg"), auto_fill=True)
    assert nlp.lang == "de" and type(nlp).__name__ == "German"
    assert Config().from_disk(tmp_path / "de.cfg", interpolate=False)["nlp"]["lang"] == "de"
    runner.invoke(app, ["init-config", "en.cfg", "--baseline"])
    assert Config().from_disk(tmp_path / "en.cfg", interpolate=False)["nlp"]["lang"] == "en"
    result = runner.invoke(app, ["init-config", "xx.cfg", "--baseline", "--lang", "klingon"])
    assert result.exit_code != 0 and "not a language spaCy knows" in result.output and not (tmp_path / "xx.cfg").exists()
    assert _pipeline_lang(None, "efml-de") == "de" and _pipeline_lang(None, "small") == "en" and _pipeline_lang("fr", "efml-de") == "fr"


@pytest.mark.parametrize("task", ["ner", "textcat", "tagger", "parser"])
def test_init_config_notes_speak_of_the_users_data_not_ours(task, tmp_path):
    """The configs' comments name no data set this repository was developed on."""
    for flags in (["--baseline"], []):
        result = CliRunner().invoke(app, ["init-config", str(tmp_path / f"{task}.cfg"), "--pipeline", task, "--overwrite", *flags])
        assert result.exit_code == 0, result.output
        text = (tmp_path / f"{task}.cfg").read_text(encoding="utf8")
        for name in ("CoNLL", "SST", "EWT", "here: the released"):
            assert name not in text, (task, flags, name)


def test_a_misspelt_name_or_a_run_folder_says_what_was_meant(tmp_path, monkeypatch):
    """`--bilm smal` suggests `small`; `--bilm RUN` (a pretraining run) names RUN/model-best."""
    monkeypatch.chdir(tmp_path)
    save_original(tiny_bilm(), tmp_path / "run" / "model-best" / "options.json", tmp_path / "run" / "model-best" / "weights.hdf5")
    runner = CliRunner()
    result = runner.invoke(app, ["init-config", "a.cfg", "--bilm", "smal"])
    assert result.exit_code != 0 and "did you mean 'small'" in result.output
    result = runner.invoke(app, ["init-config", "b.cfg", "--bilm", "run"])
    assert result.exit_code != 0 and "a pretraining run: its biLM is" in result.output and "model-best" in result.output
    assert runner.invoke(app, ["init-config", "c.cfg", "--bilm", "run/model-best"]).exit_code == 0
    assert not (tmp_path / "a.cfg").exists() and not (tmp_path / "b.cfg").exists()


def test_a_task_config_without_a_biLM_refuses_to_train_on_random_weights(tmp_path):
    """init-config without --bilm: spacy train stops at initialize, saying how to give the weights,
    instead of training to the end on a biLM that carries no information."""
    from spacy.training.initialize import init_nlp

    from spacy_elmo.errors import InputError

    assert CliRunner().invoke(app, ["init-config", str(tmp_path / "ner.cfg"), "--pipeline", "ner"]).exit_code == 0
    config = spacy.util.load_config(tmp_path / "ner.cfg", overrides={"paths.train": "x.spacy", "paths.dev": "x.spacy"})
    with pytest.raises(InputError, match="No biLM weights were given.*--paths.elmo_options"):
        init_nlp(config)


@pytest.mark.slow
def test_long_commands_report_progress_unless_quiet_and_draw_no_bar_into_a_pipe(tmp_path):
    """prepare-corpus, embed and index-usages: without --quiet a summary line on stdout; with it nothing on
    stdout; a bar (tqdm's frames, carriage returns) never when the output is not a terminal."""
    import subprocess
    import sys

    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "text.txt").write_text("The bank is closed .\n\nA suit and a bank .\n", encoding="utf8")
    commands = {
        "prepare-corpus": lambda out: ["prepare-corpus", str(tmp_path / "text.txt"), "--output", str(out), "--n-process", "1"],
        "embed": lambda out: ["embed", str(tmp_path), str(tmp_path / "text.txt"), str(out) + ".hdf5"],
        "index-usages": lambda out: ["index-usages", str(tmp_path), str(tmp_path / "text.txt"), str(out), "--words", "bank"],
    }
    for name, args in commands.items():
        loud = subprocess.run([sys.executable, "-m", "spacy_elmo", *args(tmp_path / f"{name}-loud")], capture_output=True, text=True)
        quiet = subprocess.run(
            [sys.executable, "-m", "spacy_elmo", *args(tmp_path / f"{name}-quiet"), "--quiet"], capture_output=True, text=True
        )
        assert loud.returncode == 0 and quiet.returncode == 0, (name, loud.stderr, quiet.stderr)
        assert loud.stdout.strip(), name
        assert quiet.stdout == "", (name, quiet.stdout)
        assert "\r" not in loud.stderr + quiet.stderr, name


def test_the_top_level_help_names_every_command_and_l_is_always_lang():
    from typer.main import get_command

    group = get_command(app)
    assert {"convert", "models", "download", "merge", "index-ann"} <= set(group.commands)
    for name in group.commands:
        assert name in app.info.help, name
    short_l = {p.name for c in group.commands.values() for p in c.params if p.param_type_name == "option" and "-l" in p.opts}
    assert short_l == {"lang"}


def test_init_config_never_writes_into_the_biLM_it_reads(tmp_path):
    from spacy_elmo import save_original

    from .helpers import tiny_bilm

    folder = tmp_path / "bilm"
    folder.mkdir()
    save_original(tiny_bilm(seed=1), folder / "options.json", folder / "weights.hdf5")
    before = (folder / "options.json").read_bytes()
    for name in ("options.json", "new.cfg"):
        result = CliRunner().invoke(app, ["init-config", str(folder / name), "--bilm", str(folder), "--overwrite"])
        assert result.exit_code == 1 and "which this command reads" in result.output, result.output
    assert (folder / "options.json").read_bytes() == before and not (folder / "new.cfg").exists()


@pytest.mark.parametrize("threads", ["1000000000", "99999999999999999999"])
def test_threads_past_the_bound_are_one_line(threads, tmp_path):
    from spacy_elmo.bilm.threads import fix_threads
    from spacy_elmo.errors import InputError

    result = CliRunner().invoke(app, ["embed", "small", str(tmp_path / "x.txt"), str(tmp_path / "o.hdf5"), "--threads", threads])
    assert result.exit_code == 2 and "less than or equal to 1024" in result.output and "Traceback" not in result.output
    with pytest.raises(InputError, match="give 1 to 1024"):
        fix_threads(int(threads))  # [system] threads in a pretraining config


def test_an_empty_ray_address_is_one_line(tmp_path):
    (tmp_path / "x.txt").write_text("a b\n", encoding="utf8")
    result = CliRunner().invoke(app, ["index-usages", "small", str(tmp_path / "x.txt"), str(tmp_path / "o"), "--ray", ""])
    assert result.exit_code == 2 and "give 'auto' or a cluster's address" in result.output
