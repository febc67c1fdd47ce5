"""Type aliases shared by the package."""

from pathlib import Path
from typing import Union

# a file or folder as a user names it
PathLike = Union[str, Path]
