"""The softmax published beside the released original (`spacy-elmo download original --softmax`): fetched and
checked by the rules of every download, from a local mirror of stand-in files, and read as the biLM's substitutes."""

import h5py
import numpy
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.bilm import save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.released.catalogue import released_softmax
from spacy_elmo.released.download import cached_softmax, download_softmax

from ..helpers import tiny_bilm
from .mirror_server import MirrorServer

WORDS = ["</S>", "<S>", "<UNK>", "the", "bank", "river", "money", "shore", "loan", "water"]


def _write_softmax(folder, words=WORDS, dim=None, rows=None, seed=0):
    folder.mkdir(parents=True, exist_ok=True)
    rng = numpy.random.default_rng(seed)
    n = len(words) if rows is None else rows
    with h5py.File(folder / "softmax_weights.hdf5", "w") as f:
        f.create_dataset("softmax/W", data=rng.normal(0, 0.5, (n, dim)).astype("float32"))
        f.create_dataset("softmax/b", data=rng.normal(0, 0.1, n).astype("float32"))
    (folder / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf8")


@pytest.fixture
def original_mirror(tmp_path):
    root = tmp_path / "mirror"
    bilm = tiny_bilm(seed=3)
    (root / "original").mkdir(parents=True)
    save_original(bilm, root / "original" / "options.json", root / "original" / "weights.hdf5")
    _write_softmax(root / "original-softmax", dim=bilm.options.projection_dim)
    server = MirrorServer(root)
    yield server, bilm
    server.close()


@pytest.mark.slow
def test_the_softmax_downloads_checked_and_gives_the_biLMs_own_substitutes(original_mirror, cache):
    from spacy_elmo.change.substitutes import Substitutes

    server, bilm = original_mirror
    assert cached_softmax("original") is None and Substitutes.of_model("original") is None  # nothing downloaded yet
    run = CliRunner().invoke(app, ["download", "original", "--softmax", "--mirror", server.url])
    assert run.exit_code == 0, run.output
    assert "original's softmax" in run.output and "checked" in run.output
    folder = cached_softmax("original")
    assert folder == cache / "original-softmax" and sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "softmax_weights.hdf5",
        "vocab.txt",
    ]
    server.close()  # offline from now on
    subs = Substitutes.of_model("original")
    assert subs is not None and subs.words == WORDS and subs.log_prior is None
    # the substitutes are the two directions' log-softmaxes added, from the published W and b
    with h5py.File(folder / "softmax_weights.hdf5", "r") as f:
        weight, bias = torch.from_numpy(f["softmax/W"][:]), torch.from_numpy(f["softmax/b"][:])
    P = bilm.options.projection_dim
    states = torch.randn(4, 2 * P, generator=torch.Generator().manual_seed(0))
    both = torch.log_softmax(states[:, :P] @ weight.T + bias, 1) + torch.log_softmax(states[:, P:] @ weight.T + bias, 1)
    both[:, [0, 1, 2, WORDS.index("bank")]] = float("-inf")
    ids, _ = subs.top(states.numpy(), k=3, forms={"Bank"})
    assert (ids == both.topk(3, dim=1).indices.numpy()).all()
    # cut to the most frequent words: the first rows
    cut = Substitutes.of_model("original", max_words=5)
    assert cut is not None and cut.words == WORDS[:5] and cut.softmax.linear.weight.shape[0] == 5


@pytest.mark.slow
def test_a_softmax_that_does_not_fit_is_refused_and_nothing_kept(original_mirror, cache, tmp_path):
    server, bilm = original_mirror
    _write_softmax(server.root / "original-softmax", dim=bilm.options.projection_dim, rows=len(WORDS) - 1)  # a word short
    with pytest.raises(InputError, match="do not belong together"):
        download_softmax("original", mirror=server.url, progress=False)
    assert cached_softmax("original") is None and not (cache / "original-softmax").exists()
    with pytest.raises(InputError, match="released without its softmax"):
        released_softmax("small")
    run = CliRunner().invoke(app, ["download", "small", "--softmax", "--mirror", server.url])
    assert run.exit_code == 1 and "released without its softmax" in run.output and not (cache / "small").exists()


def test_change_says_how_to_get_the_softmax_where_it_is_missing():
    from spacy_elmo.change.sense_input import no_softmax

    assert "spacy-elmo download original --softmax" in no_softmax("original")
    assert "released without its softmax" in no_softmax("small")
    assert "spacy-elmo pretrain" in no_softmax("/some/folder")


@pytest.mark.slow
@pytest.mark.parametrize("damage, said", [("nan", "not finite"), ("width", "states"), ("twice", "twice")])
def test_a_softmax_its_use_would_refuse_is_never_checked_and_a_good_mirror_then_replaces_it(original_mirror, cache, damage, said):
    """The audit's case: a softmax with a NaN, of the wrong width or with a word twice was downloaded and said
    "checked"; every use then refused it, and a second download from a good mirror kept the bad file."""
    server, bilm = original_mirror
    P = bilm.options.projection_dim
    folder = server.root / "original-softmax"
    if damage == "twice":
        _write_softmax(folder, words=WORDS[:-1] + ["bank"], dim=P)
    else:
        _write_softmax(folder, dim=P + 1 if damage == "width" else P)
    if damage == "nan":
        with h5py.File(folder / "softmax_weights.hdf5", "r+") as f:
            f["softmax/W"][3, 1] = float("nan")
    run = CliRunner().invoke(app, ["download", "original", "--softmax", "--mirror", server.url])
    assert run.exit_code == 1 and said in run.output and "softmax: " not in run.output, run.output
    assert cached_softmax("original") is None and not (cache / "original-softmax").exists()
    _write_softmax(folder, dim=P)  # the mirror's copy mended: the next download takes it
    run = CliRunner().invoke(app, ["download", "original", "--softmax", "--mirror", server.url])
    assert run.exit_code == 0 and "checked" in run.output, run.output
    assert cached_softmax("original") is not None
