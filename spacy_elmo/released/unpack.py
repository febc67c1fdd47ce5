"""Unpacking a downloaded archive (zip or .tar.gz) that holds one model folder, within limits.

Nothing is written outside the scratch folder: members with absolute or climbing paths, links and
special files are refused, and so is an archive that would unpack to more than MAX_UNPACKED_BYTES
or more than RATIO times its own size (counted as the bytes come out, not as the archive says),
or that holds more than MAX_MEMBERS members or several model folders.
"""

import shutil
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, List

from ..bilm.folders import find_bilm_folder
from ..bilm.tf_bundle import checkpoint_prefix
from ..bilm.tf_checkpoint import options_from_shapes as options_from_checkpoint
from ..errors import InputError
from ..output_folders import is_plain_file

MAX_UNPACKED_BYTES = 8 << 30
MAX_MEMBERS = 10_000
RATIO = 10
_FLOOR = 64 << 20  # small archives may unpack to this much (a tiny model compresses well)
_CHUNK = 1 << 20


def unpack_model(archive: Path, scratch: Path, name: str, options_from_shapes: bool = False) -> Path:
    """Extract `archive` (a zip, or a .tar.gz by its name) into the empty folder `scratch` and find the
    one model folder in it.

    name (str): the model's name, for messages.
    options_from_shapes (bool): write the options.json of a TensorFlow checkpoint that comes without
        one (a TF Hub module), its sizes read off the tensors.
    RETURNS (Path): the model folder inside `scratch`.
    """
    budget = _Budget(min(MAX_UNPACKED_BYTES, max(RATIO * archive.stat().st_size, _FLOOR)), name)
    if archive.name.endswith((".tar.gz", ".tgz")):
        _extract_tar(archive, scratch, name, budget)
    else:
        _extract_zip(archive, scratch, name, budget)
    unpacked = [scratch, *sorted(p for p in scratch.rglob("*") if p.is_dir())]
    if options_from_shapes:
        for folder in unpacked:
            prefix = checkpoint_prefix(folder)
            if prefix is not None:  # the shallowest (a module's root, not its variables/)
                if not (folder / "options.json").exists():
                    options_from_checkpoint(prefix).to_file(folder / "options.json")
                break
    folders = [p for p in unpacked if find_bilm_folder(p) is not None]
    if not folders:
        raise InputError(f"The archive of {name} holds no biLM folder: the catalogue entry or the server is wrong")
    if len(folders) > 1:
        shown = ", ".join(str(p.relative_to(scratch)) or "." for p in folders)
        raise InputError(f"The archive of {name} holds several model folders ({shown}): refused, as it is unclear which to use")
    return folders[0]


class _Budget:
    """What an archive may still unpack to, counted as the bytes come out."""

    def __init__(self, limit: int, name: str) -> None:
        self.limit = self.left = limit
        self.name = name

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise InputError(
                f"The archive of {self.name} unpacks to more than {self.limit:,} bytes ({RATIO}x its size, at most "
                f"{MAX_UNPACKED_BYTES:,}): refused"
            )


def _extract_zip(archive: Path, scratch: Path, name: str, budget: _Budget) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise InputError(f"The download of {name} is not a zip archive ({err})") from None
    with zf:
        members = zf.infolist()
        _check_count(len(members), name)
        for member in members:
            kind = stat.S_IFMT(member.external_attr >> 16)
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise InputError(f"The archive of {name} holds a link or special file ({member.filename}): refused")
            target = scratch.joinpath(*_member_path(member.filename, name).parts)
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            try:
                with zf.open(member) as src:
                    _write_member(src, target, member.filename, name, budget)
            except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as err:
                raise InputError(f"The download of {name} is damaged ({member.filename}: {err})") from None


def _extract_tar(archive: Path, scratch: Path, name: str, budget: _Budget) -> None:
    try:
        tf = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise InputError(f"The download of {name} is not a tar archive ({err})") from None
    with tf:
        count = 0
        try:
            for member in tf:
                count += 1
                _check_count(count, name)
                target = scratch.joinpath(*_member_path(member.name, name).parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                if not member.isfile():
                    raise InputError(f"The archive of {name} holds a link or special file ({member.name}): refused")
                src = tf.extractfile(member)
                assert src is not None  # a regular file
                with src:
                    _write_member(src, target, member.name, name, budget)
        except (tarfile.TarError, EOFError, zlib.error) as err:
            raise InputError(f"The download of {name} is damaged ({err})") from None


def _check_count(count: int, name: str) -> None:
    if count > MAX_MEMBERS:
        raise InputError(f"The archive of {name} holds more than {MAX_MEMBERS} members: refused")


def _write_member(src: IO[bytes], target: Path, member: str, name: str, budget: _Budget) -> None:
    """Copy one member, counting its bytes against what is left of the archive's budget."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with target.open("xb") as out:
            while True:
                block = src.read(_CHUNK)
                if not block:
                    break
                budget.take(len(block))
                out.write(block)
    except FileExistsError:
        raise InputError(f"The archive of {name} holds {member} twice: refused") from None
    except OSError as err:
        raise InputError(f"The download of {name} is damaged ({member}: {err})") from None


def model_files(folder: Path) -> List[Path]:
    """RETURNS (List[Path]): what the cache keeps of an unpacked model folder, flat: its plain files; for a
    TensorFlow checkpoint only options.json, vocab.txt and the checkpoint's own files (a TF Hub module's
    variables/ among them; its graph is not read)."""
    found = find_bilm_folder(folder)
    prefix = checkpoint_prefix(folder) if found is not None and found.format == "tensorflow" else None
    if prefix is None:
        return sorted(p for p in folder.iterdir() if is_plain_file(p))
    checkpoint = [p for p in prefix.parent.iterdir() if p.name == f"{prefix.name}.index" or p.name.startswith(f"{prefix.name}.data-")]
    extra = [folder / n for n in ("options.json", "vocab.txt")]
    return sorted(p for p in [*checkpoint, *extra] if is_plain_file(p))


def remove_scratch(scratch: Path) -> None:
    """Remove an unpacking's scratch folder (made by the caller, holding only what was unpacked)."""
    shutil.rmtree(scratch, ignore_errors=True)


def _member_path(member: str, name: str) -> PurePosixPath:
    raw = member.replace("\\", "/")
    path = PurePosixPath(raw)
    if raw.startswith("/") or ".." in path.parts or (path.parts and ":" in path.parts[0]) or "\x00" in raw:
        raise InputError(f"The archive of {name} holds a path outside its folder ({member}): refused")
    return PurePosixPath(*[part for part in path.parts if part != "."]) if path.parts else path
