"""Unpacking a downloaded zip that holds one model folder, within limits.

Nothing is written outside the scratch folder: members with absolute or climbing paths, links and
special files are refused, and so is an archive that would unpack to more than MAX_UNPACKED_BYTES
or more than RATIO times its own size (counted as the bytes come out, not as the archive says),
or that holds more than MAX_MEMBERS members or several model folders.
"""

import shutil
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import List

from ..bilm.folders import find_bilm_folder
from ..errors import InputError
from ..output_folders import is_plain_file

MAX_UNPACKED_BYTES = 8 << 30
MAX_MEMBERS = 10_000
RATIO = 10
_FLOOR = 64 << 20  # small archives may unpack to this much (a tiny model compresses well)
_CHUNK = 1 << 20


def unpack_model(archive: Path, scratch: Path, name: str) -> Path:
    """Extract `archive` into the empty folder `scratch` and find the one model folder in it.

    name (str): the model's name, for messages.
    RETURNS (Path): the model folder inside `scratch`.
    """
    limit = min(MAX_UNPACKED_BYTES, max(RATIO * archive.stat().st_size, _FLOOR))
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise InputError(f"The download of {name} is not a zip archive ({err})") from None
    with zf:
        members = zf.infolist()
        if len(members) > MAX_MEMBERS:
            raise InputError(f"The archive of {name} holds {len(members)} members (more than {MAX_MEMBERS}): refused")
        total = 0
        for member in members:
            path = _member_path(member, name)
            kind = stat.S_IFMT(member.external_attr >> 16)
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise InputError(f"The archive of {name} holds a link or special file ({member.filename}): refused")
            target = scratch.joinpath(*path.parts)
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(member) as src, target.open("xb") as out:
                    while True:
                        block = src.read(_CHUNK)
                        if not block:
                            break
                        total += len(block)
                        if total > limit:
                            raise InputError(
                                f"The archive of {name} unpacks to more than {limit:,} bytes ({RATIO}x its size, at most "
                                f"{MAX_UNPACKED_BYTES:,}): refused"
                            )
                        out.write(block)
            except FileExistsError:
                raise InputError(f"The archive of {name} holds {member.filename} twice: refused") from None
            except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, OSError) as err:
                raise InputError(f"The download of {name} is damaged ({member.filename}: {err})") from None
    folders = [p for p in [scratch, *sorted(p for p in scratch.rglob("*") if p.is_dir())] if find_bilm_folder(p) is not None]
    if not folders:
        raise InputError(f"The archive of {name} holds no biLM folder: the catalogue entry or the server is wrong")
    if len(folders) > 1:
        shown = ", ".join(str(p.relative_to(scratch)) or "." for p in folders)
        raise InputError(f"The archive of {name} holds several model folders ({shown}): refused, as it is unclear which to use")
    return folders[0]


def model_files(folder: Path) -> List[Path]:
    """RETURNS (List[Path]): the plain files of an unpacked model folder (what the cache keeps)."""
    return sorted(p for p in folder.iterdir() if is_plain_file(p))


def remove_scratch(scratch: Path) -> None:
    """Remove an unpacking's scratch folder (made by the caller, holding only what was unpacked)."""
    shutil.rmtree(scratch, ignore_errors=True)


def _member_path(member: zipfile.ZipInfo, name: str) -> PurePosixPath:
    raw = member.filename.replace("\\", "/")
    path = PurePosixPath(raw)
    if raw.startswith("/") or ".." in path.parts or (path.parts and ":" in path.parts[0]) or "\x00" in raw:
        raise InputError(f"The archive of {name} holds a path outside its folder ({member.filename}): refused")
    return path
