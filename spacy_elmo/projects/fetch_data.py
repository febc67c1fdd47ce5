"""Copy a data file from a local data folder, or download it when the folder lacks it.

Checks the file's sha256 either way, so both routes give the same bytes.
"""

import hashlib
import io
import os
import sys
import zipfile
from pathlib import Path
from typing import Optional

import typer
from .downloaded import downloaded

from spacy_elmo.errors import InputError
from spacy_elmo.output_folders import write_atomically


def main(
    data_dir: Path = typer.Argument(..., help="Local data folder (e.g. ../shared/data); need not exist"),
    relative_path: str = typer.Argument(..., help="The file's path inside DATA_DIR"),
    dest: Path = typer.Argument(..., help="Where to put the file"),
    url: str = typer.Option(..., help="Public download location, used when DATA_DIR lacks the file"),
    member: Optional[str] = typer.Option(None, help="When URL is a zip archive: the file inside it"),
    sha256: str = typer.Option(..., help="Expected sha256 of the file"),
) -> None:
    """Put DATA_DIR/RELATIVE_PATH (or its public copy) at DEST."""
    local = data_dir / relative_path
    if dest.is_file() and _sha256(dest.read_bytes()) == sha256:
        print(f"{dest}: present")
        return
    # never through a link, never over a file this script did not write (it writes only files of the right bytes)
    if dest.is_symlink():
        sys.exit(f"{dest} is a link (to {os.readlink(dest)}): it was left as it is. Remove the link, then run again")
    if dest.exists():
        sys.exit(f"{dest} holds other bytes than {relative_path} (a file put there?): it was left as it is. Move it away, then run again")
    if local.is_file():
        data = local.read_bytes()
        source = str(local)
    else:
        print(f"{local} not found: downloading {url}")
        data = downloaded(
            url,
            f"{local} is not there",
            f"give the folder that holds {relative_path} with --vars.data_dir FOLDER (laid out like this repository's ../shared/data)",
        )
        if member is not None:
            data = zipfile.ZipFile(io.BytesIO(data)).read(member)
        source = url if member is None else f"{url}:{member}"
    if _sha256(data) != sha256:
        sys.exit(f"{source} has sha256 {_sha256(data)}, expected {sha256}: a different version of the data")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_atomically(dest, data, overwrite=False)  # a free name only, taken at once: a file that appeared meanwhile stays
    except InputError as error:
        sys.exit(str(error))
    print(f"{dest}: from {source}")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


if __name__ == "__main__":
    typer.run(main)
