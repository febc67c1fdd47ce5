"""`spacy-elmo merge`: the parts of a sharded run, joined by what they are (usage index folders,
HDF5 or DocBin embeddings)."""

from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import InputError
from ..output_folders import check_not_inside


def merge_parts(
    parts: Sequence[Path], output: Path, overwrite: bool = False, log: Callable[[str], Any] = print, virtual: bool = False
) -> None:
    """Join `parts` into `output` as a single run would have written it (see shards.py); `virtual`: an
    HDF5 file that refers to the parts' datasets instead of copying them (see `merge_layer_parts`)."""
    parts = [Path(p) for p in parts]
    if any(output.resolve() == p.resolve() for p in parts):
        raise InputError(f"{output} is one of the parts: give a new OUTPUT")
    if output.is_symlink():  # dangling or not: nothing is written through a link, nor is the link replaced
        raise InputError(f"{output} is a symbolic link: give a new OUTPUT (merge writes through no link)")
    if not overwrite and output.is_file():
        raise InputError(f"{output} exists: give --overwrite to replace it, or a new OUTPUT")
    if not overwrite and output.is_dir() and any(p.name != ".lock" for p in output.iterdir()):
        raise InputError(
            f"{output} is a folder with files in it: give a new or empty folder as OUTPUT (--overwrite replaces only a usage "
            "index that spacy-elmo wrote there)"
        )
    if all(p.is_dir() for p in parts):
        from ..usages.merge import merge_usage_indexes

        if virtual:
            raise InputError("--virtual refers to the parts' HDF5 datasets: a usage index is merged by copying (leave out --virtual)")
        for part in parts:
            check_not_inside(output, part, "a part")
        merge_usage_indexes(parts, output, log=log)
        return
    if any(p.is_dir() for p in parts):
        raise InputError("the parts mix folders and files: give the usage index folders, or the .hdf5 / .spacy files, of one run")
    from ..pipeline.merge_layers import merge_layer_parts

    if output.is_dir():
        raise InputError(f"{output} is a folder: give a .hdf5 or .spacy file name")
    if output.exists() and not overwrite:
        raise InputError(f"{output} exists: give --overwrite to replace it, or another file name")
    n_docs, n_tokens = merge_layer_parts(parts, output, virtual, overwrite)
    how = " (virtual datasets: keep the parts where they are)" if virtual else ""
    log(f"Merged {len(parts)} parts: the ELMo layers of {n_docs} documents ({n_tokens} tokens) in {output}{how}")
