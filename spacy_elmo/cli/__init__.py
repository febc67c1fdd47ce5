"""The `spacy-elmo` command line: one module per family of commands, in the order of the work
(pretrain a biLM, write a training config that uses it, then use it); what they share in _util.py.
Each command is a thin typer function (`*_cli`) over a plain function that a program can call."""

from ._util import app
from .pretraining import perplexity, prepare_corpus_cli, pretrain_cli, pretrain_settings  # noqa: F401 (registers)
from .configs import _pipeline_lang, fill_config_cli, init_config, init_config_cli  # noqa: F401
from .released import convert, models_table  # noqa: F401
from .embed import embed  # noqa: F401
from .usages import change, index_usages, neighbours  # noqa: F401
from .machine import layer_weights, machine_report  # noqa: F401

__all__ = ["app", "change", "convert", "embed", "index_usages", "init_config", "layer_weights", "machine_report"]
__all__ += ["models_table", "neighbours", "perplexity", "pretrain_settings"]
