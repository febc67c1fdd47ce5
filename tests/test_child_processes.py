"""The processes the package starts neither inherit its process's signal handlers and locks nor fork it
(a forked tokenizer worker that caught SIGTERM hung `Pool.terminate()`, and one that raised
out of the fork ran the rest of the test session as a second copy)."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spacy_elmo.child_processes import START_METHOD, process_context
from spacy_elmo.training import prepared as prepared_module
from spacy_elmo.training.corpus import SentenceSplitter
from spacy_elmo.training.prepared import prepare_corpus

from .conftest import REPO_ROOT

_LINE = "The quick brown fox jumps over the lazy dog near the river bank. It was happy there!\n"


def _write_corpus(path: Path, megabytes: float) -> Path:
    path.write_text(_LINE * int(megabytes * (1 << 20) / len(_LINE)), encoding="utf8")
    return path


def test_the_start_method_never_forks_this_process():
    assert START_METHOD in ("forkserver", "spawn")
    assert process_context().get_start_method() == START_METHOD


@pytest.mark.slow
def test_preparing_a_corpus_in_processes_never_forks_this_process(tmp_path, monkeypatch):
    """os.fork in this process would copy its threads' locks and its handlers (and pytest itself)."""

    def no_fork() -> int:
        raise AssertionError("the package forked the process it runs in")

    monkeypatch.setattr(os, "fork", no_fork)
    corpus = _write_corpus(tmp_path / "c.txt", 2.5)  # three chunks for the pool
    prepared = prepare_corpus(corpus, tmp_path / "p", n_process=2, progress=False, log=lambda s: None)
    alone = prepare_corpus(corpus, tmp_path / "q", n_process=1, progress=False, log=lambda s: None)
    assert prepared.meta["tokens"] == alone.meta["tokens"] > 0
    assert (prepared.tokens == alone.tokens).all() and prepared.words == alone.words


_HANDLERS_AND_THREADS = """
import signal, sys, threading, time
from pathlib import Path
from spacy_elmo.training.corpus import SentenceSplitter
from spacy_elmo.training.prepared import _tokenized, prepare_corpus

caught = []
signal.signal(signal.SIGTERM, lambda signum, frame: caught.append(signum))  # a run's "stop after this step"
stop = threading.Event()
threading.Thread(target=lambda: stop.wait(), daemon=True).start()  # a thread beside, as Ray's or tqdm's
corpus = Path(sys.argv[1])
for i in range(3):
    prepare_corpus(corpus, Path(sys.argv[2]) / str(i), n_process=2, progress=False, log=lambda s: None)
    texts = ((n, n, line) for n, line in enumerate(corpus.read_text().splitlines()))
    chunks = _tokenized(texts, SentenceSplitter("en", 100), 2)
    next(chunks)
    chunks.close()  # stopped with chunks in flight: the pool is terminated
stop.set()
print("ended", caught)
"""


@pytest.mark.slow
def test_a_pool_ends_though_this_process_catches_sigterm_and_runs_threads(tmp_path):
    """A process that catches SIGTERM with a Python handler (as a training run and Ray's driver do)
    and runs other threads prepares a corpus in processes and stops a pool with work in flight,
    three times, with a busy process beside it: before the fix the forked workers inherited the
    handler, ignored the pool's SIGTERM and the process hung in `Pool.terminate()`."""
    corpus = _write_corpus(tmp_path / "c.txt", 3.5)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_HANDLERS_AND_THREADS), str(corpus), str(tmp_path)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=150,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("preparing a corpus in processes hung in a process that catches SIGTERM")
    finally:
        busy.kill()
        busy.wait()
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ended []"  # the parent itself was never signalled


def test_a_worker_does_not_inherit_this_processes_signal_handler(tmp_path):
    """The pool's workers start from a fresh interpreter: SIGTERM has its default action there."""
    former = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        with process_context().Pool(1) as pool:
            assert pool.apply(signal.getsignal, (signal.SIGTERM,)) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, former)


@pytest.mark.slow
def test_the_tokenizer_workers_build_their_own_splitter(tmp_path):
    """A worker never sees the parent's splitter object (it could not, unforked): it builds one from
    the language and maximum length, and its tokens equal the parent's."""
    splitter = SentenceSplitter("en", 9)
    texts = [(i, i, _LINE * 3) for i in range(4)]
    alone = [tokens for _, tokens in prepared_module._tokenized(iter(texts), splitter, 1)]
    pooled = [tokens for _, tokens in prepared_module._tokenized(iter(texts), splitter, 2)]
    assert len(alone) == len(pooled) == 1
    for a, b in zip(alone[0], pooled[0]):
        assert (a == b).all() if hasattr(a, "all") else a == b
    assert max(alone[0][2]) == 9


@pytest.mark.slow
def test_a_program_read_from_standard_input_prepares_a_corpus_in_processes(tmp_path):
    """`python - < script`: the workers start from the package's entry, not by importing the program again (which
    has no file): they run, and the pool does not start new ones for ever."""
    corpus = _write_corpus(tmp_path / "c.txt", 1.5)
    script = (
        "from pathlib import Path\n"
        "from spacy_elmo.training.prepared import prepare_corpus\n"
        f"p = prepare_corpus(Path({str(corpus)!r}), Path({str(tmp_path / 'p')!r}), n_process=2, progress=False, log=lambda s: None)\n"
        "print(p.meta['tokens'], p.meta['processes'])\n"
    )
    try:
        done = subprocess.run([sys.executable, "-"], input=script, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a program read from standard input hung preparing a corpus in processes")
    assert done.returncode == 0, done.stderr[-2000:]
    tokens, processes = done.stdout.split()
    assert int(tokens) > 0 and int(processes) == 2 and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_program_without_the_main_guard_runs_its_top_level_once(tmp_path):
    """The package's workers never run the caller's program again: a top level that prepares a corpus in processes
    (no `if __name__ == "__main__":`) runs once, where each worker used to run it again (and start pools of its own)."""
    corpus = _write_corpus(tmp_path / "c.txt", 1.5)
    program = tmp_path / "unguarded.py"
    program.write_text(
        "from pathlib import Path\n"
        "from spacy_elmo.training.prepared import prepare_corpus\n"
        f"with open({str(tmp_path / 'ran.txt')!r}, 'a') as f:\n"
        "    f.write('top level\\n')\n"
        f"p = prepare_corpus(Path({str(corpus)!r}), Path({str(tmp_path / 'p')!r}), n_process=2, progress=False, log=lambda s: None)\n"
        "print(p.meta['processes'])\n",
        encoding="utf8",
    )
    try:
        done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a program without the __main__ guard did not finish preparing a corpus in processes")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "2" and (tmp_path / "ran.txt").read_text().splitlines() == ["top level"]
