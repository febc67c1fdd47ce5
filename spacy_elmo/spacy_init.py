"""`spacy init elmo-config`: spacy-elmo's init-config under spaCy's own CLI. spaCy imports this
module through the `spacy_cli` entry point when its command line starts."""

from spacy.cli._util import init_cli

from .cli import init_config_cli

init_cli.command("elmo-config")(init_config_cli)
