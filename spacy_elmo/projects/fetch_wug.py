"""Put a WUG-format dataset (data/WORD/uses.csv + judgments.csv, stats/) at DEST: copied from a local folder
that holds one, or downloaded as a zip archive and unpacked (offline: one line saying which var to give). The
dataset is never committed (its licence is its own); the archive's sha256 is printed so that a run can say which
copy it used."""

import hashlib
import io
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Dict

import typer
from .downloaded import downloaded


def main(
    local: Path = typer.Argument(..., help="A folder holding the dataset (data/, stats/); need not exist"),
    dest: Path = typer.Argument(..., help="Where the dataset goes (DEST/data/WORD/uses.csv ...)"),
    url: str = typer.Option(..., help="The dataset's zip archive, used where LOCAL holds no dataset"),
) -> None:
    """Put the WUG dataset at DEST: filled in a fresh folder beside it and renamed to DEST once whole, so a DEST
    that is there (a run's, whole; or a file or a link put there) is never written into."""
    if (dest / "data").is_dir() and not dest.is_symlink():
        print(f"{dest}: present")
        return
    if os.path.lexists(dest):
        sys.exit(f"{dest} is there but holds no data/ folder (a file or a link?): it was left as it is. Move it away, run again")
    if (local / "data").is_dir():
        files = {path.relative_to(local).as_posix(): path.read_bytes() for path in sorted(local.rglob("*")) if path.is_file()}
        _publish(dest, files)
        print(f"copied {len(files)} files of {local} to {dest}")
        return
    print(f"{local} holds no dataset: downloading {url}")
    archive = downloaded(
        url, f"{local} holds no WUG dataset", "give a folder that holds one (data/WORD/uses.csv) with --vars.wug_dir FOLDER"
    )
    print(f"sha256 {hashlib.sha256(archive).hexdigest()} ({len(archive):,} bytes)")
    try:
        zf = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        sys.exit(f"{url} is not a zip archive: give a WUG dataset's folder with --vars.wug_dir FOLDER")
    with zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        for name in names:
            parts = PurePosixPath(name).parts
            if PurePosixPath(name).is_absolute() or ".." in parts:
                sys.exit(f"{url}: the archive names {name!r}, outside its folder: not unpacked")
        # the archive's one top folder (dwug_en/...) becomes DEST
        top = {PurePosixPath(n).parts[0] for n in names}
        strip = 1 if len(top) == 1 and all(len(PurePosixPath(n).parts) > 1 for n in names) else 0
        files = {"/".join(PurePosixPath(n).parts[strip:]): zf.read(n) for n in names}
    if not any(name.startswith("data/") for name in files):
        sys.exit(f"{url} holds no data/ folder: not a WUG dataset")
    _publish(dest, files)
    print(f"unpacked {len(files)} files into {dest}")


def _publish(dest: Path, files: Dict[str, bytes]) -> None:
    """Write FILES (relative name: bytes) into a fresh folder beside DEST, then rename it to DEST where that name is
    still free (a folder that appeared meanwhile stays, and the fresh one is removed)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        for name, data in files.items():
            target = fresh.joinpath(*PurePosixPath(name).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if os.path.lexists(dest):
            sys.exit(f"{dest} appeared while the dataset was written: it was left as it is")
        os.rename(fresh, dest)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)  # only where the rename did not happen


if __name__ == "__main__":
    typer.run(main)
