"""Released ELMo models by name: the catalogue, the download cache, and resolving what a user
names as a biLM (a folder, or a catalogue name, downloaded on first use)."""

from .catalogue import CATALOGUE, ReleasedModel, implied_settings, released_model
from .download import cache_dir, cached_folder, download, resolve_bilm

__all__ = [
    "CATALOGUE",
    "ReleasedModel",
    "cache_dir",
    "cached_folder",
    "download",
    "implied_settings",
    "released_model",
    "resolve_bilm",
]
