"""Where stderr is a file or a pipe, long jobs say how far they are in lines (a bar's frames would be
noise); --quiet silences them."""

import pytest
from typer.testing import CliRunner

from spacy_elmo import progress_bar as progress_module
from spacy_elmo import save_original
from spacy_elmo.cli import app
from spacy_elmo.progress_bar import ProgressLines, progress_bar

from .helpers import tiny_bilm


def test_lines_say_how_far_and_how_fast(monkeypatch, capsys):
    monkeypatch.setattr(progress_module, "LINE_SECONDS", 0.0)
    bar = progress_bar(range(4), desc="Embedding", unit=" docs", disable=None)
    assert isinstance(bar, ProgressLines)
    assert list(bar) == [0, 1, 2, 3]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("Embedding: 4 docs of 4 (100%), ") and "docs/s" in lines[-1]
    scaled = ProgressLines(total=3_000_000, unit="B", unit_scale=True, desc="Indexing usages")
    scaled.update(1_500_000)
    scaled.set_postfix_str("12 usages")
    assert scaled.line().startswith("Indexing usages: 1.5M B of 3.0M (50%)") and scaled.line().endswith(", 12 usages")
    assert progress_bar(range(2), disable=True).disable  # off is off: tqdm's disabled bar


def test_a_slow_job_says_seconds_an_item_and_the_time_left():
    """4 words of 10 in 20 s: 5.0 s a word (not "0.2 words/s" rounded to nothing), 6 words left at that rate: 0:30."""
    bar = ProgressLines(total=10, unit=" words", desc="Comparing")
    bar.n, bar.started = 4, 0.0  # a start of 0: the clock's sums exact (started + 3600 - started is not, near 1/s)
    line = bar.line(now=20.0)
    assert line == "Comparing: 4 words of 10 (40%), 5.0 s/word, 0:20 elapsed, about 0:30 left"
    fast = ProgressLines(total=7200, unit="docs", desc="Embedding")
    fast.n, fast.started = 3600, 0.0
    assert fast.line(now=3600.0) == "Embedding: 3,600 docs of 7,200 (50%), 1.0 docs/s, 1:00:00 elapsed, about 1:00:00 left"


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [False, True])
def test_embed_and_index_usages_write_progress_lines_unless_quiet(tmp_path, monkeypatch, quiet):
    monkeypatch.setattr(progress_module, "LINE_SECONDS", 0.0)
    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "in.txt").write_text("The bank of the river.\n\nA bank loan.\n", encoding="utf8")
    flag = ["-q"] if quiet else []
    embed = CliRunner().invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5"), *flag])
    index = CliRunner().invoke(app, ["index-usages", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "ix"), *flag])
    assert embed.exit_code == 0 and index.exit_code == 0, embed.output + index.output
    assert ("Embedding: 3 docs" in embed.output) != quiet
    assert ("Indexing usages: " in index.output) != quiet


def test_the_training_progress_line_says_what_the_biLM_reads_frozen_or_fine_tuned():
    """The audit's case (issue 103): with `frozen = false` the line said the biLM read each doc once and cached the
    layers; fine-tuned, it reads every batch and the dev set at each evaluation."""
    from spacy_elmo.pipeline.train_progress import FirstPassProgress

    for cached, said in ((True, "each once: their layers are then cached"), (False, "it reads every batch")):
        lines = []
        ticks = iter([0.0, 100.0])
        progress = FirstPassProgress(lines.append, 15.0, clock=lambda: next(ticks), cached=cached)
        progress.biLM_ran(3, 30)
        assert len(lines) == 1 and said in lines[0] and "3 docs, 30 tokens" in lines[0]
