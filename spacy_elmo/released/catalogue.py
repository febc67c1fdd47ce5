"""The catalogue of released ELMo models: what each is, where it comes from, and where each fact
was taken from (`source`). Sizes marked "~" are estimates (parameters x 4 bytes of float32), not
figures from a page; "?" where no public page states one.
"""

import difflib
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..errors import InputError

_ALLENNLP = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"
_ALLENNLP_TABLE = "allennlp.org/elmo (table 'Pre-trained ELMo Models': parameters, LSTM sizes, highway layers)"
_ALLENNLP_URLS = (
    "the options/weights URLs as linked there and used in public code (e.g. flair's ELMoEmbeddings, "
    "allenai/allennlp tutorials/how_to/elmo.md for the original size)"
)
_EFML_README = "github.com/HIT-SCIR/ELMoForManyLangs README.md (Downloads table, training data, licence: MIT)"


@dataclass(frozen=True)
class ReleasedModel:
    """One released biLM.

    name (str): what a user types (`spacy-elmo download NAME`, `add_elmo(nlp, NAME)`).
    language (str): ISO 639 code of its language.
    format (str): "allennlp" (options.json + weights.hdf5) or "elmoformanylangs".
    parameters (str): its size, as its page gives it ("?" where none does).
    download (str): the download size ("~": an estimate; "?": unknown).
    trained_on (str): its training text.
    licence (str): the licence its page states ("not stated" where none).
    files (Tuple[Tuple[str, str], ...]): (file name in the model folder, URL) of each file; or
    archive (Optional[str]): the URL of a zip holding the model folder.
    digests (Tuple[Tuple[str, str], ...]): (download name, sha256) where a public page states one
        (named in `source`); a download that differs is refused. Without one, the first download's
        digest is what later uses are checked against, and the server (or mirror) is trusted for
        the content.
    source (str): where these facts were taken from.
    """

    name: str
    language: str
    format: str
    parameters: str
    download: str
    trained_on: str
    licence: str
    source: str
    files: Tuple[Tuple[str, str], ...] = ()
    archive: Optional[str] = None
    digests: Tuple[Tuple[str, str], ...] = ()

    @property
    def sha256(self) -> Dict[str, str]:
        """RETURNS (Dict[str, str]): download name -> published sha256 (empty where none is published)."""
        return dict(self.digests)

    @property
    def urls(self) -> Dict[str, str]:
        """RETURNS (Dict[str, str]): download name -> URL (an archive downloads as `model.zip`)."""
        return {"model.zip": self.archive} if self.archive else dict(self.files)


def _allennlp(name: str, stem: str, folder: str, parameters: str, download: str, trained_on: str, weights: str = "") -> ReleasedModel:
    return ReleasedModel(
        name=name,
        language="en",
        format="allennlp",
        parameters=parameters,
        download=download,
        trained_on=trained_on,
        licence="not stated on the page",
        source=f"{_ALLENNLP_TABLE}; {_ALLENNLP_URLS}",
        files=(
            ("options.json", f"{_ALLENNLP}/{folder}/{stem}_options.json"),
            ("weights.hdf5", f"{_ALLENNLP}/{folder}/{weights or stem + '_weights.hdf5'}"),
        ),
    )


_BILLION_WORDS = "1 Billion Word Benchmark (about 800M tokens)"
_EFML_LANGUAGES: List[Tuple[str, str, int]] = [
    ("ar", "Arabic", 136),
    ("bg", "Bulgarian", 137),
    ("ca", "Catalan", 138),
    ("cs", "Czech", 139),
    ("cu", "Old Church Slavonic", 140),
    ("da", "Danish", 141),
    ("de", "German", 142),
    ("el", "Greek", 143),
    ("en", "English", 144),
    ("es", "Spanish", 145),
    ("et", "Estonian", 146),
    ("eu", "Basque", 147),
    ("fa", "Persian", 148),
    ("fi", "Finnish", 149),
    ("fr", "French", 150),
    ("ga", "Irish", 151),
    ("gl", "Galician", 152),
    ("grc", "Ancient Greek", 153),
    ("he", "Hebrew", 154),
    ("hi", "Hindi", 155),
    ("hr", "Croatian", 156),
    ("hu", "Hungarian", 157),
    ("id", "Indonesian", 158),
    ("it", "Italian", 159),
    ("ja", "Japanese", 160),
    ("ko", "Korean", 161),
    ("la", "Latin", 162),
    ("lv", "Latvian", 163),
    ("nl", "Dutch", 164),
    ("nb", "Norwegian Bokmål", 165),
    ("nn", "Norwegian Nynorsk", 166),
    ("pl", "Polish", 167),
    ("pt", "Portuguese", 168),
    ("ro", "Romanian", 169),
    ("ru", "Russian", 170),
    ("sk", "Slovak", 171),
    ("sl", "Slovene", 172),
    ("sv", "Swedish", 173),
    ("tr", "Turkish", 174),
    ("ug", "Uyghur", 175),
    ("uk", "Ukrainian", 176),
    ("ur", "Urdu", 177),
    ("vi", "Vietnamese", 178),
    ("zh", "Chinese", 179),
]

CATALOGUE: Dict[str, ReleasedModel] = {
    m.name: m
    for m in [
        _allennlp("small", "elmo_2x1024_128_2048cnn_1xhighway", "2x1024_128_2048cnn_1xhighway", "13.6M", "~54 MB", _BILLION_WORDS),
        _allennlp("medium", "elmo_2x2048_256_2048cnn_1xhighway", "2x2048_256_2048cnn_1xhighway", "28.0M", "~112 MB", _BILLION_WORDS),
        # 374 MB: the same file's size on its Hugging Face copy (lysandre/elmo-2x4096_512_2048cnn_2xhighway)
        _allennlp("original", "elmo_2x4096_512_2048cnn_2xhighway", "2x4096_512_2048cnn_2xhighway", "93.6M", "374 MB", _BILLION_WORDS),
        _allennlp(
            "original-5.5b",
            "elmo_2x4096_512_2048cnn_2xhighway_5.5B",
            "2x4096_512_2048cnn_2xhighway_5.5B",
            "93.6M",
            "~374 MB",
            "Wikipedia (1.9B tokens) + WMT 2008-2012 news crawl (3.6B)",
        ),
        _allennlp(
            "pubmed",
            "elmo_2x4096_512_2048cnn_2xhighway",
            "contributed/pubmed",
            "93.6M (original size)",
            "~374 MB",
            "PubMed (contributed model)",
            weights="elmo_2x4096_512_2048cnn_2xhighway_weights_PubMed_only.hdf5",
        ),
    ]
    + [
        ReleasedModel(
            name=f"efml-{code}",
            language=code,
            format="elmoformanylangs",
            parameters="~94M + word embedding (original size)",
            download="?",
            trained_on=f"{language}: 20M words sampled from the CoNLL 2018 shared task's raw text (Wikipedia + Common Crawl)",
            licence="MIT (the ELMoForManyLangs repository)",
            source=_EFML_README,
            archive=f"http://vectors.nlpl.eu/repository/11/{nlpl_id}.zip",
        )
        for code, language, nlpl_id in _EFML_LANGUAGES
    ]
}


def nearest_name(name: str) -> Optional[str]:
    """RETURNS (Optional[str]): the released model's name closest to a misspelt `name`, if one is close."""
    close = difflib.get_close_matches(name, list(CATALOGUE), n=1)
    return close[0] if close else None


def released_model(name: str) -> ReleasedModel:
    """RETURNS (ReleasedModel): the catalogue's entry `name`; an InputError listing the names if none."""
    if name not in CATALOGUE:
        close = nearest_name(name)
        guess = f"Did you mean {close!r}? " if close else ""
        raise InputError(
            f"No released model is called {name!r}. {guess}`spacy-elmo models` lists the names ({', '.join(list(CATALOGUE)[:6])}, ...)."
        )
    return CATALOGUE[name]
