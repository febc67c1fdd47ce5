"""spaCy's lookup lemmatizer, added to a pipeline that has none (`index-usages --lemmas` with a biLM folder or a
released name), and again to the pipeline that queries an index built so."""

from spacy.language import Language

from ..errors import InputError
from ..pipeline.loading import elmo_names

LOOKUP_LEMMATIZER = "spaCy's lookup lemmatizer"  # how meta "lemmatizer" names the one added here


def add_lookup_lemmatizer(nlp: Language) -> str:
    """Add spaCy's lookup lemmatizer for `nlp`'s language before its first elmo component.

    RETURNS (str): what was added ("spaCy's lookup lemmatizer for en (spacy-lookups-data 1.0.5)").
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        data = version("spacy-lookups-data")
    except PackageNotFoundError:
        raise InputError(
            "--lemmas with a pipeline that has no lemmatizer uses spaCy's lookup lemmas: pip install 'spacy-elmo[lemmas]' "
            "(spacy-lookups-data), or give a pipeline with a lemmatizer"
        ) from None
    names = elmo_names(nlp)
    lemmatizer = nlp.add_pipe("lemmatizer", name="lemmatizer", config={"mode": "lookup"}, before=names[0] if names else None)
    try:
        lemmatizer.initialize()  # type: ignore[attr-defined]
    except Exception as err:  # spaCy's own error for a language without lookup tables
        nlp.remove_pipe("lemmatizer")
        raise InputError(
            f"spaCy has no lookup lemmas for {nlp.lang!r} ({str(err).splitlines()[0][:120]}): match word forms (--words without "
            "--lemmas), or give a pipeline with a lemmatizer for the language"
        ) from None
    return f"{LOOKUP_LEMMATIZER} for {nlp.lang} (spacy-lookups-data {data})"
