"""The `spacy-elmo` command line."""
import typer

app = typer.Typer(name="spacy-elmo", help="ELMo biLMs for spaCy: train, evaluate, export.", no_args_is_help=True)
