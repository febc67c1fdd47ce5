"""The `elmo_usages` component: `token._.elmo_usages(n)`, the nearest usages of a token's word
in a usage index, on every Doc the pipeline makes.

The component only records which index a Doc belongs to (`doc._.elmo_usage_index`, the index's
path: it survives DocBin and `nlp.pipe(n_process=...)`); the index is opened once per process
on first use. `nlp.to_disk` saves the path in the config, not a copy of the index.
"""

from pathlib import Path
from typing import Dict, List, Optional

from spacy.language import Language
from spacy.tokens import Doc, Token

from ..errors import InputError
from .index import Usage, UsageIndex

_OPEN: Dict[str, UsageIndex] = {}


def open_index(path: str, given: Optional[str] = None) -> UsageIndex:
    """RETURNS (UsageIndex): the index at `path`, read once per process.

    given (Optional[str]): the path as the pipeline's config gives it, for the error where it is gone.
    """
    if path not in _OPEN and given is not None and not Path(path).is_dir():
        raise InputError(
            f"the usage index {given} is not there: build it again (spacy-elmo index-usages) or give where it is now, e.g. "
            "spacy.load(PIPELINE, config={'components': {'elmo_usages': {'index': '/abs/path/index'}}})"
        )
    if path not in _OPEN:
        _OPEN[path] = UsageIndex().from_disk(path)
    return _OPEN[path]


def _token_usages(token: Token, n: int = 5, same_word: bool = True) -> List[Usage]:
    path = token.doc._.elmo_usage_index
    if path is None:
        raise InputError(
            "this Doc was not made by a pipeline with an elmo_usages component: add one after elmo "
            "(nlp.add_pipe('elmo_usages', config={'index': PATH}))"
        )
    return open_index(path).most_similar(token, n=n, same_word=same_word)


def register_usage_extensions() -> None:
    if not Doc.has_extension("elmo_usage_index"):
        Doc.set_extension("elmo_usage_index", default=None)
    if not Token.has_extension("elmo_usages"):
        Token.set_extension("elmo_usages", method=_token_usages)


@Language.factory("elmo_usages", requires=["doc._.elmo"], assigns=["doc._.elmo_usage_index"], default_config={"index": None})
def make_elmo_usages(nlp: Language, name: str, index: Optional[str]) -> "ElmoUsages":
    """Create an `elmo_usages` component (after `elmo`).

    index (str): the folder of a usage index built with this pipeline's biLM (an absolute path
        keeps a saved pipeline working from any folder).
    """
    return ElmoUsages(nlp, name, index)


class ElmoUsages:
    """Gives every Doc `token._.elmo_usages(n=5, same_word=True)`: the nearest usages of the
    token's word in the index (see `UsageIndex.most_similar`)."""

    def __init__(self, nlp: Language, name: str, index: Optional[str]) -> None:
        if not index:
            raise InputError(f"[{name}] needs the folder of a usage index: nlp.add_pipe('elmo_usages', config={{'index': PATH}})")
        if not Path(index).is_absolute():
            raise InputError(
                f"[{name}] index = {index!r} is a relative path: a saved pipeline keeps the path as given and is loaded from "
                f"other folders, so give the absolute one: config={{'index': {str(Path(index).resolve())!r}}}"
            )
        register_usage_extensions()
        self.nlp = nlp
        self.name = name
        self.index_given = str(index)
        self.index_path = str(Path(index).resolve())
        self._checked = False

    @property
    def index(self) -> UsageIndex:
        return open_index(self.index_path, self.index_given)

    def __call__(self, doc: Doc) -> Doc:
        if not self._checked:
            self._check_biLM()
        doc._.elmo_usage_index = self.index_path
        return doc

    def _check_biLM(self) -> None:
        """The pipeline's ELMo must be the index's: checked once, at the first Doc (the weights
        are loaded after the component is built)."""
        index = self.index
        try:
            index.check_pipeline(self.nlp)
        except InputError:
            raise InputError(
                f"[{self.name}] the usage index {self.index_path} was built with another biLM "
                f"({index.meta['model']}) than this pipeline's elmo: build the index with this pipeline"
            ) from None
        self._checked = True
