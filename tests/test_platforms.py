"""What differs across platforms: processes spawned rather than forked (macOS, Windows), no fcntl and
no os.register_at_fork (Windows), and files with a second name (hard links) never written through."""

import os
import subprocess
import sys
import textwrap

import pytest

from spacy_elmo.errors import OutputFolderError
from spacy_elmo.output_folders import FolderLock, open_no_follow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code: str, tmp_path) -> str:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code), encoding="utf8")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_nlp_pipe_with_two_spawned_processes(tmp_path):
    out = _python(
        f"""
        import multiprocessing
        import numpy
        import spacy
        from spacy_elmo import add_elmo, save_original
        from tests.helpers import tiny_bilm

        if __name__ == "__main__":
            multiprocessing.set_start_method("spawn")
            save_original(tiny_bilm(seed=2), {str(tmp_path / "options.json")!r}, {str(tmp_path / "weights.hdf5")!r})
            nlp = spacy.blank("en")
            nlp.add_pipe("sentencizer")
            add_elmo(nlp, {str(tmp_path)!r})
            texts = ["A first text. It has two sentences."] * 6 + ["Another one."] * 6
            spawned = [doc._.elmo.layers for doc in nlp.pipe(texts, n_process=2, batch_size=2)]
            alone = [doc._.elmo.layers for doc in nlp.pipe(texts)]
            assert len(spawned) == 12 and all(numpy.allclose(a, b, atol=1e-5) for a, b in zip(spawned, alone))
            print("spawned", multiprocessing.get_start_method())
        """,
        tmp_path,
    )
    assert "spawned spawn" in out


@pytest.mark.slow
def test_without_fcntl_and_register_at_fork_the_component_and_folders_work(tmp_path):
    out = _python(
        f"""
        import os, sys
        import random, email.utils, multiprocessing, numpy, torch, spacy  # the standard library's and others' own hooks
        del os.register_at_fork
        sys.modules["fcntl"] = None  # import fcntl raises ImportError, as on Windows
        assert "spacy_elmo.output_folders" not in sys.modules and "spacy_elmo.pipeline.component" not in sys.modules
        from spacy_elmo import add_elmo, save_original
        from spacy_elmo.output_folders import fcntl
        from spacy_elmo.usages import build_usage_index
        from tests.helpers import tiny_bilm

        assert fcntl is None
        save_original(tiny_bilm(seed=2), {str(tmp_path / "options.json")!r}, {str(tmp_path / "weights.hdf5")!r})
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        add_elmo(nlp, {str(tmp_path)!r})
        assert nlp("A text.")._.elmo.layers.shape[1] == 3
        corpus = {str(tmp_path / "corpus.txt")!r}
        open(corpus, "w").write("A bank. The bank of a river.\\n")
        index = build_usage_index(nlp, corpus, {str(tmp_path / "index")!r}, progress=False, log=lambda _: None)
        print("indexed", len(index))
        """,
        tmp_path,
    )
    assert "indexed 9" in out  # 9 tokens: "A bank ." and "The bank of a river ."


def test_a_hard_linked_lock_or_file_is_never_written_through(tmp_path):
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me", encoding="utf8")
    folder = tmp_path / "run"
    folder.mkdir()
    os.link(outside, folder / ".lock")
    with pytest.raises(OutputFolderError, match="hard link"):
        FolderLock(folder, "spacy-elmo test").acquire()
    with pytest.raises(OutputFolderError, match="hard link"):
        open_no_follow(folder / ".lock", os.O_WRONLY | os.O_TRUNC)
    assert outside.read_text(encoding="utf8") == "keep me"
    os.close(open_no_follow(folder / ".lock", os.O_RDONLY))  # reading is fine
    (folder / ".lock").unlink()
    with FolderLock(folder, "spacy-elmo test"):
        assert "spacy-elmo test" in (folder / ".lock").read_text(encoding="utf8")
