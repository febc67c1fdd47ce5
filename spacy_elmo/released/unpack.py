"""Unpacking a downloaded archive (zip or .tar.gz) that holds one model folder, within limits.

Nothing is written outside the scratch folder: members with absolute or climbing paths, links and
special files are refused, and so is an archive that would unpack to more than MAX_UNPACKED_BYTES
or more than RATIO times its own size (counted as the bytes come out, not as the archive says,
headers included), or that holds more than MAX_MEMBERS members, a long name or pax header over
MAX_HEADER_BYTES, or several model folders. Every archive is read to its end, so that its checksums
(each zip member's CRC-32, the gzip stream's CRC-32 and size) are checked.
"""

import shutil
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, Dict, List

from ..bilm.folders import find_bilm_folder
from ..bilm.tf_bundle import checkpoint_prefix
from ..bilm.tf_checkpoint import options_from_shapes as options_from_checkpoint
from ..errors import InputError
from ..output_folders import is_plain_file

MAX_UNPACKED_BYTES = 8 << 30
MAX_MEMBERS = 10_000
MAX_HEADER_BYTES = 16 << 10  # a GNU long name or a pax header: a path is far shorter
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
        found: Dict[Path, Path] = {}  # checkpoint prefix -> the shallowest folder that has it (a module's root, not its variables/)
        for folder in unpacked:
            prefix = checkpoint_prefix(folder)
            if prefix is not None:
                found.setdefault(prefix, folder)
        if len(found) > 1:
            shown = ", ".join(str(p.relative_to(scratch)) or "." for p in found.values())
            raise InputError(f"The archive of {name} holds several TensorFlow modules ({shown}): refused, as it is unclear which to use")
        for prefix, folder in found.items():
            if not (folder / "options.json").exists():
                options_from_checkpoint(prefix).to_file(folder / "options.json")
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
                _make_folder(target, member.filename, name)
                continue
            if member.flag_bits & 0x1:
                raise InputError(f"The archive of {name} holds an encrypted member ({member.filename}): refused")
            try:
                with zf.open(member) as src:  # read to its end: the member's CRC-32 is checked there
                    _write_member(src, target, member.filename, name, budget)
            except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError) as err:
                raise InputError(f"The download of {name} is damaged ({member.filename}: {err})") from None


def _extract_tar(archive: Path, scratch: Path, name: str, budget: _Budget) -> None:
    try:
        tf = tarfile.open(archive, "r:*", tarinfo=_BoundedTarInfo)
    except _HeaderTooLarge as err:
        raise InputError(f"The archive of {name} {err}: refused") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise InputError(f"The download of {name} is not a tar archive ({err})") from None
    with tf:
        count = 0
        try:
            for member in tf:
                count += 1
                _check_count(count, name)
                budget.take(member.offset_data - member.offset)  # its headers
                target = scratch.joinpath(*_member_path(member.name, name).parts)
                if member.isdir():
                    _make_folder(target, member.name, name)
                    continue
                if not member.isfile():
                    raise InputError(f"The archive of {name} holds a link or special file ({member.name}): refused")
                src = tf.extractfile(member)
                assert src is not None  # a regular file
                with src:
                    _write_member(src, target, member.name, name, budget)
            while True:  # the rest of the stream: a .tar.gz's CRC-32 and size are checked at its end
                block = tf.fileobj.read(_CHUNK)
                if not block:
                    break
                budget.take(len(block))
        except _HeaderTooLarge as err:
            raise InputError(f"The archive of {name} {err}: refused") from None
        except (tarfile.TarError, EOFError, zlib.error, OSError) as err:
            raise InputError(f"The download of {name} is damaged ({err})") from None


class _HeaderTooLarge(tarfile.TarError):
    pass


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header whose GNU long name or pax records are refused past MAX_HEADER_BYTES before they
    are read (tarfile would read any size into memory)."""

    def _proc_gnulong(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        self._check_size("a long name")
        return super()._proc_gnulong(tarfile_)  # type: ignore[misc]

    def _proc_pax(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        self._check_size("a pax header")
        return super()._proc_pax(tarfile_)  # type: ignore[misc]

    def _check_size(self, what: str) -> None:
        if self.size > MAX_HEADER_BYTES:
            raise _HeaderTooLarge(f"holds {what} of {self.size:,} bytes (at most {MAX_HEADER_BYTES:,})")


def _make_folder(target: Path, member: str, name: str) -> None:
    try:
        target.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(f"The archive of {name} holds {member} as a file and as a folder: refused") from None


def _check_count(count: int, name: str) -> None:
    if count > MAX_MEMBERS:
        raise InputError(f"The archive of {name} holds more than {MAX_MEMBERS} members: refused")


def _write_member(src: IO[bytes], target: Path, member: str, name: str, budget: _Budget) -> None:
    """Copy one member, counting its bytes against what is left of the archive's budget."""
    _make_folder(target.parent, member, name)
    try:
        with target.open("xb") as out:
            while True:
                block = src.read(_CHUNK)
                if not block:
                    break
                budget.take(len(block))
                out.write(block)
    except (FileExistsError, IsADirectoryError):
        raise InputError(f"The archive of {name} holds {member} twice (or as a file and as a folder): refused") from None
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
    if not member:
        raise InputError(f"The archive of {name} holds a member with no name ({member!r}): refused")
    raw = member.replace("\\", "/")
    path = PurePosixPath(raw)
    if raw.startswith("/") or ".." in path.parts or (path.parts and ":" in path.parts[0]) or "\x00" in raw:
        raise InputError(f"The archive of {name} holds a path outside its folder ({member}): refused")
    return PurePosixPath(*[part for part in path.parts if part != "."]) if path.parts else path
