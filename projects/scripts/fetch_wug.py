"""Put a WUG-format dataset (data/WORD/uses.csv + judgments.csv, stats/) at DEST: copied from a local folder
that holds one, or downloaded as a zip archive and unpacked. The dataset is never committed (its licence is
its own); the archive's sha256 is printed so that a run can say which copy it used."""

import hashlib
import io
import shutil
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

import typer


def main(
    local: Path = typer.Argument(..., help="A folder holding the dataset (data/, stats/); need not exist"),
    dest: Path = typer.Argument(..., help="Where the dataset goes (DEST/data/WORD/uses.csv ...)"),
    url: str = typer.Option(..., help="The dataset's zip archive, used where LOCAL holds no dataset"),
) -> None:
    """Put the WUG dataset at DEST."""
    if (dest / "data").is_dir():
        print(f"{dest}: present")
        return
    if (local / "data").is_dir():
        shutil.copytree(local, dest, dirs_exist_ok=True)
        print(f"copied {local} to {dest}")
        return
    print(f"{local} holds no dataset: downloading {url}")
    with urllib.request.urlopen(url) as response:
        archive = response.read()
    print(f"sha256 {hashlib.sha256(archive).hexdigest()} ({len(archive):,} bytes)")
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        for name in names:
            parts = PurePosixPath(name).parts
            if PurePosixPath(name).is_absolute() or ".." in parts:
                raise SystemExit(f"{url}: the archive names {name!r}, outside its folder: not unpacked")
        # the archive's one top folder (dwug_en/...) becomes DEST
        top = {PurePosixPath(n).parts[0] for n in names}
        strip = 1 if len(top) == 1 and all(len(PurePosixPath(n).parts) > 1 for n in names) else 0
        for name in names:
            target = dest.joinpath(*PurePosixPath(name).parts[strip:])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
    if not (dest / "data").is_dir():
        raise SystemExit(f"{url} holds no data/ folder: not a WUG dataset")
    print(f"unpacked {len(names)} files into {dest}")


if __name__ == "__main__":
    typer.run(main)
