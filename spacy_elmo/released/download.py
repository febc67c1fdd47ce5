"""Downloading released models into a cache folder, and finding them there.

The cache holds, per name:

- `NAME/`: the model, complete and checked, with spacy-elmo's record (`RECORD`): every file it
  wrote there, its sha256 and size. Every use checks the files against it; the record itself is
  checked too (it must name every file the model's format needs, each a plain name with a digest).
- `.NAME.download/`: a download under way (its record says where each partial file came from, so
  that a later run resumes only what the server proves is the same file; see `transfer`).
- `.NAME.replaced-*/`: the previous model while a new one replaces it.
- `.NAME.lock`: one download of a name at a time.

A download, `--force` included, goes into `.NAME.download/`; only once every file is complete and
checked (against the catalogue's digest where a public page states one, and by loading it) does a
rename put it in place of `NAME/`. A failure leaves the previous model as it was, and a run killed
at any point leaves the old model or the new one: the next use finishes or undoes the swap. A
download that fails its check is removed, so the next run fetches it again. Nothing is opened
through a link, and nothing is removed that the record does not name as a plain file of the folder.
"""

import errno
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import srsly

from ..bilm.elmoformanylangs import MARKER_FILES as EFML_FILES
from ..bilm.folders import BilmFolder, bilm_folder, find_bilm_folder, not_a_bilm_folder
from ..cache_folder import CACHE_ENV, cache_dir
from ..errors import InputError
from ..output_folders import FolderLock, is_plain_file, is_plain_folder, open_no_follow, write_atomically
from ..types import PathLike
from ..bilm.original_softmax import SOFTMAX_FILES, check_softmax
from .catalogue import CATALOGUE, SOFTMAX_FORMAT, SOFTMAXES, ReleasedModel, nearest_name, released_model, released_softmax
from .transfer import PartialFile, TransferError, fetch
from .unpack import model_files, remove_scratch, unpack_model

RECORD = ".spacy-elmo-download.json"
MIRROR_ENV = "SPACY_ELMO_MIRROR"
PARTIAL = ".partial"
DOWNLOADING = ".download"
REPLACED = ".replaced-"
_CHUNK = 1 << 20
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# files a loader may read from a model folder: one of these that the record does not name is a change
_MODEL_SUFFIXES = (".json", ".hdf5", ".dic", ".pkl", ".pt", ".index")
_MODEL_NAMES = ("vocab.txt",)


def _loader_reads(name: str) -> bool:
    return name.endswith(_MODEL_SUFFIXES) or name in _MODEL_NAMES or ".data-" in name


def model_urls(model: ReleasedModel, mirror: Optional[str] = None) -> Dict[str, str]:
    """RETURNS (Dict[str, str]): download name -> URL; with a mirror (`mirror`, else
    $SPACY_ELMO_MIRROR: an http(s) or file URL, or a folder) MIRROR/NAME/FILE for each file, e.g.
    MIRROR/small/weights.hdf5."""
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    if mirror and "://" not in mirror:  # a folder of files you already have, laid out as a mirror
        if not Path(mirror).is_dir():
            raise InputError(f"The mirror {mirror} is neither a URL nor a folder: give http(s)://..., file:///... or a folder")
        mirror = Path(mirror).resolve().as_uri()
    if mirror:
        return {name: f"{mirror.rstrip('/')}/{model.name}/{name}" for name in model.urls}
    return model.urls


def cached_folder(name: str, cache: Optional[PathLike] = None) -> Optional[BilmFolder]:
    """The complete download of `name` in the cache, its files checked against their recorded
    sha256 (a mismatch is an error); None where it has not been downloaded (completely). A swap
    that a killed download left half done is finished (or undone) first.

    RETURNS (Optional[BilmFolder]): the model folder, or None.
    """
    model = released_model(name)
    root = cache_dir(cache)
    if _needs_recovery(root, model.name):
        try:
            with FolderLock(root, f"spacy-elmo download {model.name}", name=_lock_name(model.name)):
                _recover(root, model.name)
        except PermissionError:
            pass  # a read-only cache: what is in place is read as it is
    return _checked_model(root / model.name, model)


def cache_state(name: str, cache: Optional[PathLike] = None) -> str:
    """What the cache holds of `name`, without reading the weights: "yes" (complete: its record is
    valid and every file it names is there with its recorded size), "partial" (a download under
    way or cut short), "damaged", or "" (nothing).

    RETURNS (str): the state.
    """
    model = released_model(name)
    root = cache_dir(cache)
    folder = root / model.name
    try:
        record = _read_record(folder) if is_plain_folder(folder) else {}
        if record.get("complete"):
            _check_files(record, folder, model, "", digests=False)
            return "yes"
    except InputError:
        return "damaged"
    if record or is_plain_folder(root / f".{model.name}{DOWNLOADING}"):
        return "partial"
    return ""


def download(
    name: str, cache: Optional[PathLike] = None, mirror: Optional[str] = None, force: bool = False, progress: bool = True
) -> BilmFolder:
    """Download a released model into the cache (resuming an interrupted download) and check it:
    against the catalogue's digests where it has them, then by loading it (an AllenNLP-format
    model's datasets must have the shapes its options.json implies, an ELMoForManyLangs model must
    load). The model already there stays until the new one is complete and checked.

    name (str): a catalogue name (`spacy-elmo models`).
    cache (Optional[PathLike]): the cache folder (see `cache_dir`).
    mirror (Optional[str]): a base URL replacing the catalogue's (see `model_urls`).
    force (bool): download again what was downloaded before.
    progress (bool): show a progress bar.
    RETURNS (BilmFolder): the model folder in the cache.
    """
    folder = _download(released_model(name), cache, mirror, force, progress)
    found = find_bilm_folder(folder)
    if found is None:
        raise InputError(f"{folder} is not a biLM folder although its record says complete. Run `spacy-elmo download {name} --force`.")
    return found


def _softmax_width(root: Path, softmax: ReleasedModel) -> Optional[int]:
    """The width of the states the softmax's biLM gives: read off its options, where the biLM is in the cache."""
    name = softmax.name[: -len("-softmax")]
    found = _checked_model(root / name, released_model(name)) if name in CATALOGUE else None
    return found.options().projection_dim if found is not None else None


def download_softmax(
    name: str, cache: Optional[PathLike] = None, mirror: Optional[str] = None, force: bool = False, progress: bool = True
) -> Path:
    """Download the softmax published beside the released biLM `name` (`SOFTMAXES`: softmax_weights.hdf5 and
    vocab.txt, in the cache as `NAME-softmax/`) by the rules of every download, checked by reading its shapes.

    RETURNS (Path): its folder in the cache.
    """
    return _download(released_softmax(name), cache, mirror, force, progress)


def cached_softmax(name: str, cache: Optional[PathLike] = None) -> Optional[Path]:
    """RETURNS (Optional[Path]): the complete download of `name`'s softmax (files checked against their record), or
    None where it has not been downloaded or `name` has none."""
    if name not in SOFTMAXES:
        return None
    model = SOFTMAXES[name]
    root = cache_dir(cache)
    return root / model.name if _checked_download(root / model.name, model) else None


def _download(model: ReleasedModel, cache: Optional[PathLike], mirror: Optional[str], force: bool, progress: bool) -> Path:
    """Download `model` into the cache unless a complete, checked copy is there. RETURNS (Path): its folder."""
    root = cache_dir(cache)
    try:
        root.mkdir(parents=True, exist_ok=True)
        # one download of a name at a time (a second process is refused in one line, naming the first)
        lock = FolderLock(root, f"spacy-elmo download {model.name}", name=_lock_name(model.name)).acquire()
    except OSError as err:
        if err.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        if not force and _checked_download(root / model.name, model, damaged_ok=True):
            return root / model.name  # a read-only cache that holds the model: use it
        raise InputError(
            f"The cache {root} cannot be written ({err.strerror}): give a writable one (--cache, or ${CACHE_ENV}), "
            f"or download {model.name} where the cache can be written and copy it"
        ) from None
    with lock:
        _recover(root, model.name)
        _check_not_a_users(root / model.name)
        if not force and _checked_download(root / model.name, model, damaged_ok=True):
            return root / model.name
        new = _download_into(model, root, mirror, progress)
        _swap_in(root, model.name, new)
        _checked_download(root / model.name, model)
        return root / model.name


def resolve_bilm(
    source: PathLike, cache: Optional[PathLike] = None, mirror: Optional[str] = None, download_missing: bool = True
) -> BilmFolder:
    """What a user names as a biLM: a biLM folder, or a released model's name (downloaded on
    first use unless `download_missing` is False).

    RETURNS (BilmFolder): the folder.
    """
    path = Path(source)
    if path.exists():
        return bilm_folder(path)
    name = str(source)
    if name not in CATALOGUE:
        close = nearest_name(name)
        why = "no such folder, and no released model has that name" + (f" (did you mean {close!r}?)" if close else "")
        raise not_a_bilm_folder(path, why)
    cached = cached_folder(name, cache)
    if cached is not None:
        return cached
    if not download_missing:
        raise InputError(f"{name} is not in the cache ({cache_dir(cache)}): fetch it with `spacy-elmo download {name}`.")
    return download(name, cache, mirror)


# --- the download ------------------------------------------------------------------------------


def _download_into(model: ReleasedModel, root: Path, mirror: Optional[str], progress: bool) -> Path:
    """Fetch, unpack and check the model in `.NAME.download/`.

    RETURNS (Path): that folder, its record complete.
    """
    folder = root / f".{model.name}{DOWNLOADING}"
    record = _open_download_folder(folder, model)
    urls = model_urls(model, mirror)
    fetched: List[Path] = []
    for file_name, url in urls.items():
        path = folder / file_name
        if file_name in record["done"] and is_plain_file(path):  # finished by an interrupted run
            fetched.append(path)
            continue
        partial = folder / (file_name + PARTIAL)
        known = PartialFile.from_dict(record["partial"].get(file_name))

        def remember(state: PartialFile, file_name: str = file_name) -> None:
            record["partial"][file_name] = state.to_dict()
            _write_record(folder, record)

        try:
            fetch(url, partial, known, remember, progress, f"{model.name}/{file_name}")
        except TransferError as err:
            if not err.resumable:
                _discard_download(folder, record)
                gone = f" {model.gone}." if model.gone and re.search(r"HTTP (403|404)\b", str(err)) else ""
                raise InputError(
                    f"Cannot download {model.name} from {err}: nothing was kept{_previous_note(root, model.name)}.{gone}"
                ) from None
            raise InputError(
                f"Cannot download {model.name} from {err}: run `spacy-elmo download {model.name}` again to resume; "
                "check the connection or the mirror "
                f"({MIRROR_ENV}), or download where there is one and copy the cache folder ({CACHE_ENV})"
                f"{_previous_note(root, model.name, ';')}."
            ) from None
        _check_known_digest(model, file_name, partial, folder, record, root)
        os.replace(partial, path)
        record["done"].append(file_name)
        _write_record(folder, record)
        fetched.append(path)
    try:
        files = _unpack(folder, fetched[0], model, record) if model.archive else fetched
        if model.format == SOFTMAX_FORMAT:
            check_softmax(folder, _softmax_width(root, model))  # every check its use makes
        else:
            bilm_folder(folder).load(cache_size=0)  # every shape and value checked
    except InputError as err:
        _discard_download(folder, record)
        what = "softmax" if model.format == SOFTMAX_FORMAT else "biLM"
        raise InputError(
            f"The download of {model.name} is not a usable {what} ({err}); it was removed{_previous_note(root, model.name, ',')}. "
            "Run the command again; if it fails the same way, the server's copy is damaged"
        ) from None
    _remove_leftovers(folder)
    record.update(
        complete=True,
        files={path.name: _sha256(path) for path in files},
        sizes={path.name: path.stat().st_size for path in files},
        partial={},
        done=[],
    )
    _write_record(folder, record)
    return folder


def _open_download_folder(folder: Path, model: ReleasedModel) -> Dict[str, Any]:
    """Take up `.NAME.download/` (ours: it holds our record, or nothing) or make it.

    RETURNS (Dict[str, Any]): its record.
    """
    if os.path.lexists(folder) and not is_plain_folder(folder):
        raise InputError(f"{folder} is not a folder (a link or a file) and spacy-elmo did not make it: remove it and run again")
    record: Dict[str, Any] = {}
    if folder.exists():
        try:
            record = _read_record(folder)
        except InputError:
            pass  # ours (it has our record file), damaged: started over
        entries = sorted(p.name for p in folder.iterdir() if not _record_temporary(p.name))
        if entries and not os.path.lexists(folder / RECORD):
            raise InputError(f"{folder} holds files ({', '.join(entries[:3])}) but no record of spacy-elmo's: move it away and run again")
        if record.get("complete") or record.get("name") != model.name:
            _discard_download(folder, record)
            record = {}
        else:
            _remove_leftovers(folder)
    folder.mkdir(exist_ok=True)
    partial = record.get("partial") if isinstance(record.get("partial"), dict) else {}
    done = _names(record.get("done"))
    record = {"name": model.name, "complete": False, "files": {}, "partial": partial, "done": done}
    _write_record(folder, record)
    return record


def _unpack(folder: Path, archive: Path, model: ReleasedModel, record: Dict[str, Any]) -> List[Path]:
    """Unpack the archive's model folder into `folder` (its files recorded), then remove the archive."""
    scratch = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=folder))
    try:
        inner = unpack_model(archive, scratch, model.name, options_from_shapes=model.options_from_shapes)
        files = []
        for path in model_files(inner):
            if path.name == RECORD or path.name in model.urls or not _plain_name(path.name):
                raise InputError(f"The archive of {model.name} holds a file named {path.name}, which the cache uses itself")
            record["done"].append(path.name)
            _write_record(folder, record)
            os.replace(path, folder / path.name)
            files.append(folder / path.name)
    finally:
        remove_scratch(scratch)
    archive.unlink()
    record["done"].remove(archive.name)
    _write_record(folder, record)
    return files


def _check_known_digest(model: ReleasedModel, file_name: str, path: Path, folder: Path, record: Dict[str, Any], root: Path) -> None:
    expected = model.sha256.get(file_name)
    if expected is None:
        return
    found = _sha256(path)
    if found != expected:
        _discard_download(folder, record)
        raise InputError(
            f"The download of {model.name}/{file_name} has sha256 {found[:16]}..., not the {expected[:16]}... its source "
            f"publishes: it was removed{_previous_note(root, model.name, ',')}. Check the mirror ({MIRROR_ENV}) or try again later"
        )


def _discard_download(folder: Path, record: Dict[str, Any]) -> None:
    """Remove a download folder's files that spacy-elmo wrote (by plain name), then the folder if empty."""
    done, partial = _names(record.get("done")), _names(record.get("partial"))
    names = {RECORD, *done, *_names(record.get("files"))} | {n + PARTIAL for n in [*partial, *done]}
    for name in names:
        if is_plain_file(folder / name):
            (folder / name).unlink()
    _remove_leftovers(folder)
    _remove_if_empty(folder)


def _remove_leftovers(folder: Path) -> None:
    """Remove what a killed run of ours left in a download folder: record temporaries, unpackings."""
    for leftover in folder.iterdir():
        if _record_temporary(leftover.name) and is_plain_file(leftover):
            leftover.unlink()
        elif leftover.name.startswith(".unpacking-") and is_plain_folder(leftover):
            remove_scratch(leftover)


# --- putting a new model in place, and recovering a swap cut short -----------------------------


def _swap_in(root: Path, name: str, new: Path) -> None:
    """Replace `root/name` by the checked download `new`: the old folder is renamed aside, the new
    one renamed in, then the old one's files (those its record names) removed; a user's own files
    in the old folder move to the new one."""
    target = root / name
    _check_not_a_users(target)
    if target.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".{name}{REPLACED}", dir=root))
        os.replace(target, aside)  # an empty folder of a fresh name is replaced by the old model
    os.replace(new, target)
    _clear_replaced(root, name)


def _check_not_a_users(folder: Path) -> None:
    """Refuse a model folder without a record of spacy-elmo's that holds files a loader could read:
    they are someone else's (a user's notes may stay; they move along with the model)."""
    if os.path.lexists(folder) and not is_plain_folder(folder):
        raise InputError(f"{folder} is not a folder (a link or a file) and spacy-elmo did not make it: move it away and run again")
    if folder.exists() and not os.path.lexists(folder / RECORD):
        entries = sorted(p.name for p in folder.iterdir() if _loader_reads(p.name) or p.name.endswith(PARTIAL))
        if entries:
            raise InputError(
                f"{folder} holds files ({', '.join(entries[:3])}) but spacy-elmo did not download them: they are left alone. "
                f"Move them away, or give another cache folder (--cache, ${CACHE_ENV})"
            )


def _needs_recovery(root: Path, name: str) -> bool:
    if not root.is_dir():
        return False
    downloading = root / f".{name}{DOWNLOADING}"
    return (is_plain_folder(downloading) and _is_complete(downloading)) or any(_replaced(root, name))


def _recover(root: Path, name: str) -> None:
    """Finish or undo a swap that a killed download left half done (under the lock): a complete
    download (checked before its record said so) goes in; else, where no model is in place, the
    one set aside comes back."""
    target, downloading = root / name, root / f".{name}{DOWNLOADING}"
    if is_plain_folder(downloading) and _is_complete(downloading):
        _swap_in(root, name, downloading)
        return
    if not os.path.lexists(target):
        aside = [p for p in _replaced(root, name) if _is_complete(p)]
        if aside:
            os.replace(aside[-1], target)
    _clear_replaced(root, name)


def _replaced(root: Path, name: str) -> List[Path]:
    return [p for p in sorted(root.glob(f".{name}{REPLACED}*")) if is_plain_folder(p)]


def _clear_replaced(root: Path, name: str) -> None:
    """Remove the models set aside by swaps: their recorded files, the record and an older release's
    lock; a user's own files move to the current model (or stay, if a file of that name is there)."""
    target = root / name
    for aside in _replaced(root, name):
        try:
            record = _read_record(aside)
        except InputError:
            record = {}
        ours = {RECORD, ".lock", *_names(record.get("files")), *_names(record.get("partial"))}
        marked = os.path.lexists(aside / RECORD)  # a cache folder of ours: its model files are ours too
        # the record goes last, so that a kill on the way leaves the folder recognisably ours
        for entry in sorted(aside.iterdir(), key=lambda p: p.name == RECORD):
            mine = entry.name in ours or _record_temporary(entry.name)
            mine = mine or (marked and (_loader_reads(entry.name) or entry.name.endswith(PARTIAL)))
            if mine and _plain_name(entry.name) and is_plain_file(entry):
                entry.unlink()
            elif is_plain_folder(target) and not os.path.lexists(target / entry.name):
                os.replace(entry, target / entry.name)
        _remove_if_empty(aside)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _previous_note(root: Path, name: str, sep: str = ";") -> str:
    return f"{sep} the model already in {root / name} is unchanged" if (root / name).exists() else ""


def _lock_name(name: str) -> str:
    return f".{name}.lock"


# --- the record ----------------------------------------------------------------------------------


def _checked_model(folder: Path, model: ReleasedModel, damaged_ok: bool = False) -> Optional[BilmFolder]:
    """The model in `folder` if its record says complete and every file matches it; None where no
    complete download is there. A damaged record or file is an error, or None with `damaged_ok`
    (a download then replaces it)."""
    if not _checked_download(folder, model, damaged_ok):
        return None
    found = find_bilm_folder(folder)
    if found is None:
        if damaged_ok:
            return None
        raise InputError(
            f"{folder} is not a biLM folder although its record says complete. Run `spacy-elmo download {model.name} --force` to "
            "download the model again (the files there now stay until it succeeds)."
        )
    return found


def _checked_download(folder: Path, model: ReleasedModel, damaged_ok: bool = False) -> bool:
    """Whether `folder` holds a complete download of `model`, its record and every file matching (see `_checked_model`)."""
    if not os.path.lexists(folder):
        return False
    fix = f"Run `spacy-elmo download {model.name} --force` to download the model again (the files there now stay until it succeeds)."
    try:
        if not is_plain_folder(folder):
            raise InputError(f"{folder} is not a folder (a link or a file): spacy-elmo reads its cache through no link. {fix}")
        record = _read_record(folder)
        if not record.get("complete"):
            if not record:
                _check_not_a_users(folder)
            return False  # nothing yet, or an older release's unfinished download: a download replaces it
        _check_files(record, folder, model, fix, digests=True)
        return True
    except InputError:
        if damaged_ok:
            return False
        raise


def _check_files(record: Dict[str, Any], folder: Path, model: ReleasedModel, fix: str, digests: bool) -> None:
    """The files of a complete download against its (checked) record: each there as a plain file of
    its recorded size (and sha256 with `digests`), and no unrecorded file a loader could read."""
    _check_record(record, folder, model)
    sizes = record.get("sizes", {})
    for file_name, expected in record["files"].items():
        path = folder / file_name
        if not is_plain_file(path):
            raise InputError(f"{path} is missing or not a plain file. {fix}")
        if (file_name in sizes and path.stat().st_size != sizes[file_name]) or (digests and _sha256(path) != expected):
            raise InputError(
                f"{path} differs from what spacy-elmo downloaded (sha256 {expected[:12]}...): it was changed or damaged. {fix}"
            )
    # a model is read from its recorded plain files only: no other file a loader could read, and no
    # folder or link (a planted `variables/` would be read before a flat checkpoint's own files)
    added = [
        p.name + ("/" if p.is_dir() else "")
        for p in folder.iterdir()
        if p.name not in (*record["files"], RECORD) and (_loader_reads(p.name) or p.name == "checkpoint" or not is_plain_file(p))
    ]
    if added:
        raise InputError(
            f"{folder} holds {', '.join(sorted(added))}, which spacy-elmo did not download and a loader could read "
            f"(or a folder or link). {fix}"
        )


def _check_record(record: Dict[str, Any], folder: Path, model: ReleasedModel) -> None:
    """A record that says complete must name every file the model's format needs, each a plain
    file name with a sha256."""
    files = record.get("files")
    damaged = f"{folder / RECORD} is damaged (run `spacy-elmo download {model.name} --force` to download the model again)"
    if not isinstance(files, dict) or not files:
        raise InputError(f"{damaged}: it names no files.")
    for file_name, digest in files.items():
        if not _plain_name(file_name) or not isinstance(digest, str) or not _SHA256.match(digest):
            raise InputError(f"{damaged}: it names {file_name!r} with digest {str(digest)[:20]!r}.")
    needed = _needed_files(model.format, files)
    if needed:
        raise InputError(f"{damaged}: it lacks {', '.join(needed)}, which a {model.format} model needs.")
    sizes = record.get("sizes", {})
    if not isinstance(sizes, dict) or not all(isinstance(v, int) for v in sizes.values()):
        raise InputError(f"{damaged}: its sizes are not numbers.")


def _needed_files(format: str, files: Dict[str, str]) -> List[str]:
    if format == SOFTMAX_FORMAT:
        return [n for n in SOFTMAX_FILES if n not in files]
    if format == "elmoformanylangs":
        return [n for n in (*EFML_FILES, "char.dic") if n not in files]
    missing = [] if "options.json" in files else ["options.json"]
    if format == "tensorflow":
        found = any(n.endswith(".index") for n in files) and any(".data-" in n for n in files)
        return missing + ([] if found else ["a checkpoint (.index + .data-*)"])
    return missing + ([] if any(n.endswith(".hdf5") for n in files) else ["weights.hdf5"])


def _names(value: object) -> List[str]:
    """The file names a record field lists (a list, or a dict's keys); none from anything else."""
    names = list(value) if isinstance(value, (list, dict)) else []
    return [n for n in names if _plain_name(n)]


def _record_temporary(name: str) -> bool:
    """Whether `name` is a temporary file of a record write (see `write_atomically`) that a kill left."""
    return name.startswith(f".{RECORD}.") and name.endswith(".tmp")


def _plain_name(name: object) -> bool:
    """Whether `name` is one file name in a folder: no separator, not '.', '..' or empty."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name and "\x00" not in name


def _is_complete(folder: Path) -> bool:
    try:
        return bool(_read_record(folder).get("complete"))
    except InputError:
        return False


def _read_record(folder: Path) -> Dict[str, Any]:
    path = folder / RECORD
    if not os.path.lexists(path):
        return {}
    damaged = f"{path} is damaged: run `spacy-elmo download NAME --force` to download the model again"
    try:
        with os.fdopen(open_no_follow(path, os.O_RDONLY), "rb") as f:
            data = srsly.json_loads(f.read().decode("utf8"))
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"{damaged} (not valid JSON).") from None
    if not isinstance(data, dict) or not isinstance(data.get("files", {}), dict):
        raise InputError(f"{damaged} (not a record of spacy-elmo's).")
    return data


def _write_record(folder: Path, record: Dict[str, Any]) -> None:
    if os.path.lexists(folder / RECORD) and not is_plain_file(folder / RECORD):
        raise InputError(f"{folder / RECORD} is not a plain file (a link?): spacy-elmo writes through no link; remove it and run again")
    write_atomically(folder / RECORD, srsly.json_dumps(record))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with os.fdopen(open_no_follow(path, os.O_RDONLY), "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()
