"""Downloading released models into a cache folder, and finding them there.

The cache holds one folder per name. spacy-elmo keeps a record in it (`RECORD`) of every file it
wrote there and its sha256; it writes only files the record names (a file a user put in the
folder is left alone, and one that would be written over is refused), downloads to a
`.partial` name it records first (run again to resume an interrupted download), renames a file
only once it is complete and checked, and checks every recorded file's sha256 on every later use.
"""

import hashlib
import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import srsly

from ..bilm.folders import BilmFolder, bilm_folder, find_bilm_folder, not_a_bilm_folder
from ..errors import InputError
from ..output_folders import FolderLock, read_json_file, write_atomically
from ..types import PathLike
from .catalogue import CATALOGUE, ReleasedModel, released_model

RECORD = ".spacy-elmo-download.json"
CACHE_ENV = "SPACY_ELMO_CACHE"
MIRROR_ENV = "SPACY_ELMO_MIRROR"
PARTIAL = ".partial"
_CHUNK = 1 << 20


def cache_dir(cache: Optional[PathLike] = None) -> Path:
    """RETURNS (Path): the cache folder: `cache`, else $SPACY_ELMO_CACHE, else
    $XDG_CACHE_HOME/spacy-elmo, else ~/.cache/spacy-elmo."""
    if cache is not None:
        return Path(cache)
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spacy-elmo"


def model_urls(model: ReleasedModel, mirror: Optional[str] = None) -> Dict[str, str]:
    """RETURNS (Dict[str, str]): download name -> URL; with a mirror (`mirror`, else
    $SPACY_ELMO_MIRROR) MIRROR/NAME/FILE for each file, e.g. MIRROR/small/weights.hdf5."""
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    if mirror:
        return {name: f"{mirror.rstrip('/')}/{model.name}/{name}" for name in model.urls}
    return model.urls


def cached_folder(name: str, cache: Optional[PathLike] = None) -> Optional[BilmFolder]:
    """The complete download of `name` in the cache, its files checked against their recorded
    sha256 (a mismatch is an error); None where it has not been downloaded (completely).

    RETURNS (Optional[BilmFolder]): the model folder, or None.
    """
    folder = cache_dir(cache) / released_model(name).name
    record = _read_record(folder)
    if not record.get("complete"):
        return None
    for file_name, expected in record["files"].items():
        path = folder / file_name
        if not path.is_file() or _sha256(path) != expected:
            raise InputError(
                f"{path} differs from what spacy-elmo downloaded (sha256 {expected[:12]}...): it was changed or damaged. "
                f"Run `spacy-elmo download {name} --force` to download the model again."
            )
    return bilm_folder(folder)


def download(
    name: str, cache: Optional[PathLike] = None, mirror: Optional[str] = None, force: bool = False, progress: bool = True
) -> BilmFolder:
    """Download a released model into the cache (resuming an interrupted download) and check it:
    an AllenNLP-format model's datasets must have the shapes its options.json implies, an
    ELMoForManyLangs model must load.

    name (str): a catalogue name (`spacy-elmo models`).
    cache (Optional[PathLike]): the cache folder (see `cache_dir`).
    mirror (Optional[str]): a base URL replacing the catalogue's (see `model_urls`).
    force (bool): download again what was downloaded before (only the files spacy-elmo wrote).
    progress (bool): show a progress bar.
    RETURNS (BilmFolder): the model folder in the cache.
    """
    model = released_model(name)
    folder = cache_dir(cache) / model.name
    if not force:
        found = cached_folder(name, cache)
        if found is not None:
            return found
    folder.mkdir(parents=True, exist_ok=True)
    # one download of a name at a time (a second process is refused in one line, naming the first)
    with FolderLock(folder, f"spacy-elmo download {model.name}"):
        if not force:
            found = cached_folder(name, cache)  # finished by another process meanwhile
            if found is not None:
                return found
        return _download_into(model, folder, mirror, force, progress)


def _download_into(model: ReleasedModel, folder: Path, mirror: Optional[str], force: bool, progress: bool) -> BilmFolder:
    record = _read_record(folder)
    if force or record.get("complete"):
        _remove_recorded(folder, record)
        record = {}
    record = {"name": model.name, "complete": False, "files": {}, "partial": record.get("partial", [])}
    urls = model_urls(model, mirror)
    for file_name in urls:
        for path in (folder / file_name, folder / (file_name + PARTIAL)):
            if path.exists() and path.name not in record["partial"]:
                raise InputError(
                    f"{path} is in the cache folder but spacy-elmo did not download it: it is left alone. Move it away, or "
                    f"give another cache folder (--cache, ${CACHE_ENV})."
                )
    downloaded: List[Path] = []
    for file_name, url in urls.items():
        done = folder / file_name
        if done.is_file() and done.name in record["partial"]:  # finished by an interrupted run
            downloaded.append(done)
        else:
            downloaded.append(_fetch(url, folder, file_name, record, progress))
    if model.archive:
        files = _unpack(downloaded[0], folder, record)
    else:
        files = downloaded
    try:
        found = bilm_folder(folder)
        found.load(cache_size=0)  # every shape and value checked
    except InputError as err:
        for path in files:
            path.unlink(missing_ok=True)
        record["files"] = {}
        _write_record(folder, record)
        raise InputError(
            f"The download of {model.name} is not a usable biLM ({err}); the downloaded files were removed. "
            "Run the command again; if it fails the same way, the server's copy is damaged."
        ) from None
    record["files"] = {path.name: _sha256(path) for path in files}
    record["complete"] = True
    record["partial"] = []
    _write_record(folder, record)
    return found


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
        raise not_a_bilm_folder(path, "no such folder, and no released model has that name")
    cached = cached_folder(name, cache)
    if cached is not None:
        return cached
    if not download_missing:
        raise InputError(f"{name} is not in the cache ({cache_dir(cache)}): fetch it with `spacy-elmo download {name}`.")
    return download(name, cache, mirror)


def _fetch(url: str, folder: Path, file_name: str, record: Dict[str, Any], progress: bool) -> Path:
    """Download `url` to folder/file_name through folder/file_name.partial, resuming that."""
    from tqdm import tqdm

    target, partial = folder / file_name, folder / (file_name + PARTIAL)
    if partial.name not in record["partial"]:
        record["partial"].append(partial.name)
        _write_record(folder, record)
    start = partial.stat().st_size if partial.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    try:
        response = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as err:
        if err.code == 416 and start:  # nothing left to send: start again
            partial.unlink()
            return _fetch(url, folder, file_name, record, progress)
        raise _offline(url, record["name"], f"HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise _offline(url, record["name"], str(getattr(err, "reason", err))) from None
    with response:
        if start and response.status != 206:
            start = 0  # the server sends it whole
        length = response.headers.get("Content-Length")
        total = start + int(length) if length is not None else None
        written = start
        with (
            partial.open("ab" if start else "wb") as out,
            tqdm(total=total, initial=start, unit="B", unit_scale=True, desc=f"{record['name']}/{file_name}", disable=not progress) as bar,
        ):
            try:
                while True:
                    chunk = response.read(_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    written += len(chunk)
                    bar.update(len(chunk))
            except (http.client.IncompleteRead, OSError) as err:
                raise _interrupted(url, record["name"], written, total, str(err)) from None
    if total is not None and written != total:
        raise _interrupted(url, record["name"], written, total, "the connection closed early")
    partial.replace(target)
    record["partial"].append(target.name)
    _write_record(folder, record)
    return target


def _unpack(archive: Path, folder: Path, record: Dict[str, Any]) -> List[Path]:
    """Extract the model folder inside a downloaded zip into `folder` (only the model's files, each
    recorded), then remove the zip."""
    if not zipfile.is_zipfile(archive):
        archive.unlink()
        raise InputError(f"The download of {record['name']} is not a zip archive (removed): run the command again.")
    scratch = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=folder))
    try:
        with zipfile.ZipFile(archive) as zf:
            bad = zf.testzip()
            if bad is not None:
                raise InputError(f"The download of {record['name']} is damaged ({bad} fails its CRC): run the command again.")
            for member in zf.infolist():
                parts = Path(member.filename).parts
                if member.filename.startswith("/") or ".." in parts:
                    raise InputError(f"The archive of {record['name']} holds a path outside its folder ({member.filename}): refused.")
            zf.extractall(scratch)
        candidates = [scratch, *sorted(p for p in scratch.rglob("*") if p.is_dir())]
        model_dir = next((p for p in candidates if find_bilm_folder(p) is not None), None)
        if model_dir is None:
            raise InputError(f"The archive of {record['name']} holds no biLM folder: the catalogue entry or the server is wrong.")
        files = []
        for path in sorted(model_dir.iterdir()):
            if path.is_file():
                target = folder / path.name
                if target.exists() and target.name not in record["partial"]:  # recorded: unpacked by an interrupted run
                    raise InputError(f"{target} is in the cache folder but spacy-elmo did not write it: move it away and run again.")
                record["partial"].append(path.name)
                _write_record(folder, record)
                path.replace(target)
                files.append(target)
        archive.unlink()
        return files
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _offline(url: str, name: str, reason: str) -> InputError:
    return InputError(
        f"Cannot download {name} from {url} ({reason}). Check the connection or the mirror ({MIRROR_ENV}), or run "
        f"`spacy-elmo download {name}` where there is one and copy the cache folder ({CACHE_ENV})."
    )


def _interrupted(url: str, name: str, written: int, total: Optional[int], reason: str) -> InputError:
    of = f" of {total}" if total is not None else ""
    return InputError(f"The download of {url} stopped at {written}{of} bytes ({reason}): run `spacy-elmo download {name}` again to resume.")


def _remove_recorded(folder: Path, record: Dict[str, Any]) -> None:
    for file_name in [*record.get("files", {}), *record.get("partial", [])]:
        (folder / file_name).unlink(missing_ok=True)


def _read_record(folder: Path) -> Dict[str, Any]:
    path = folder / RECORD
    if not path.is_file():
        return {}
    fix = f"delete {folder} (it holds a download of spacy-elmo's) and download again."
    data = read_json_file(path, fix)
    # a complete download lists its files; an unfinished one may not yet
    files = data.get("files", None if data.get("complete") else {}) if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or not isinstance(files, dict)
        or not all(isinstance(v, str) for v in files.values())
        or not isinstance(data.get("partial", []), list)
    ):
        raise InputError(f"{path} is damaged: {fix}")
    return data


def _write_record(folder: Path, record: Dict[str, Any]) -> None:
    write_atomically(folder / RECORD, srsly.json_dumps(record))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()
