"""The catalogue of released ELMo models: what each is, where it comes from, and where each fact
was taken from (`source`). Sizes marked "~" are estimates (parameters x 4 bytes of float32), not
figures from a page; "?" where no public page states one.
"""

import difflib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

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
    format (str): "allennlp" (options.json + weights.hdf5), "elmoformanylangs" (config.json, char.dic,
        token_embedder.pkl, encoder.pkl) or "tensorflow" (a TF Hub module or a bilm-tf checkpoint).
    parameters (str): its size, as its page gives it ("?" where none does).
    download (str): the download size ("~": an estimate; "?": unknown).
    trained_on (str): its training text.
    licence (str): the licence its page states ("not stated" where none).
    files (Tuple[Tuple[str, str], ...]): (file name in the model folder, URL) of each file; or
    archive (Optional[str]): the URL of a zip holding the model folder.
    lemmas (bool): trained on lemmatized text: the pipeline must feed lemmas (`input = "lemma"`).
    options_from_shapes (bool): the archive holds no options.json (a TF Hub module): the sizes are
        read off the checkpoint's tensors, the rest set as every released ELMo sets it.
    digests (Tuple[Tuple[str, str], ...]): (download name, sha256) where a public page states one
        (named in `source`); a download that differs is refused. Without one, the first download's
        digest is what later uses are checked against, and the server (or mirror) is trusted for
        the content.
    source (str): where these facts were taken from.
    assumed (str): what this entry assumes because no source says it ("" where nothing is);
        `spacy-elmo models` marks such entries and says what.
    gone (str): what to use instead, said where the server answers 403 or 404 ("" for none).
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
    lemmas: bool = False
    options_from_shapes: bool = False
    assumed: str = ""
    gone: str = ""

    @property
    def sha256(self) -> Dict[str, str]:
        """RETURNS (Dict[str, str]): download name -> published sha256 (empty where none is published)."""
        return dict(self.digests)

    @property
    def urls(self) -> Dict[str, str]:
        """RETURNS (Dict[str, str]): download name -> URL (an archive downloads as `model.zip` or `model.tar.gz`)."""
        if not self.archive:
            return dict(self.files)
        return {"model.tar.gz" if self.archive.endswith((".tar.gz", ".tgz")) else "model.zip": self.archive}


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

_NLPL = "http://vectors.nlpl.eu/repository/20"
_NORELMO = "wiki.nlpl.eu/Vectors/norlm/norelmo (IDs 210, 211, 217, 218; NLPL repository, CC BY 4.0)"
_RUSVECTORES = "rusvectores.org/en/models (RusVectōrēs ELMo list, linking NLPL repository IDs 195, 196, 199)"
_SEMEVAL = (
    "github.com/akutuzov/semeval2020 README.md ('Download pre-trained embeddings', ELMo: German 201, Swedish 202, Latin 203; "
    "its English is ID 193); the UiO-UvA paper at SemEval-2020 (Kutuzov and Giulianelli 2020)"
)
_SEMEVAL_INPUT = (
    "input: the SemEval-2020 Task 1 corpora were distributed lemmatized, and no source found says whether these models were "
    'trained on lemmas or on word forms; they are fed word forms (give the component input = "lemma" to feed lemmas)'
)


def _nlpl(name: str, nlpl_id: int, language: str, trained_on: str, source: str, lemmas: bool = False, version: str = "20") -> ReleasedModel:
    return ReleasedModel(
        name=name,
        language=language,
        format="allennlp",
        parameters="?",
        download="?",
        trained_on=trained_on,
        licence="CC BY 4.0 (NLPL repository)" if "norelmo" in source.lower() else "not stated on the page",
        source=source,
        archive=f"http://vectors.nlpl.eu/repository/{version}/{nlpl_id}.zip",
        lemmas=lemmas,
    )


_DEEPPAVLOV = (
    "deepmipt/DeepPavlov docs/features/pretrained_vectors.rst and deeppavlov/configs/embedder/elmo_ru_*.json "
    "(tag 0.14.0; licence Apache-2.0); TF Hub module format"
)
_FROM_SHAPES = (
    "options: the module ships no options.json; sizes are read off its tensors, and cell clip 3, projection clip 3, relu and "
    "skip connections are assumed as every released bilm-tf model sets them (no source states them for this module)"
)
_TFHUB = "tfhub.dev/google/elmo (versions 1-3: the 1 Billion Word Benchmark model, original size); TF Hub module format"
_CONTRIB_PT = (
    "allennlp.org/elmo, 'Contributed ELMo Models' (Portuguese); the URLs as public code uses them (flair's ELMoEmbeddings "
    "for contributed/pt/elmo_pt_*)"
)


def _tf_hub(name: str, language: str, url: str, trained_on: str, licence: str, source: str, parameters: str = "?") -> ReleasedModel:
    return ReleasedModel(
        name=name,
        language=language,
        format="tensorflow",
        parameters=parameters,
        download="?",
        trained_on=trained_on,
        licence=licence,
        source=source,
        archive=url,
        options_from_shapes=True,
        assumed=_FROM_SHAPES,
    )


def _contributed_pt(name: str, folder: str, options: str, weights: str, trained_on: str) -> ReleasedModel:
    base = f"{_ALLENNLP}/contributed/pt/{folder}".rstrip("/")
    return ReleasedModel(
        name=name,
        language="pt",
        format="allennlp",
        parameters="?",
        download="?",
        trained_on=trained_on,
        licence="not stated on the page",
        source=_CONTRIB_PT,
        files=(("options.json", f"{base}/{options}"), ("weights.hdf5", f"{base}/{weights}")),
    )


_OTHER_FAMILIES: List[ReleasedModel] = [
    _nlpl("nlpl-195", 195, "ru", "Russian National Corpus + Wikipedia, December 2018 (tokens)", _RUSVECTORES, version="11"),
    _nlpl("nlpl-196", 196, "ru", "Russian National Corpus + Wikipedia, December 2018 (lemmas)", _RUSVECTORES, lemmas=True, version="11"),
    _nlpl(
        "nlpl-199",
        199,
        "ru",
        "Taiga corpus, December 2019, 2048-dimensional (tayga_lemmas_elmo_2048_2019; lemmas)",
        _RUSVECTORES,
        lemmas=True,
    ),
    _nlpl(
        "nlpl-212",
        212,
        "ru",
        "Araneum Russicum, 2020 (lemmas; araneum_lemmas_elmo_2048_2020)",
        "public code downloading vectors.nlpl.eu/repository/20/212.zip as 'araneum_lemmas_elmo_2048_2020'",
        lemmas=True,
    ),
    replace(_nlpl("nlpl-201", 201, "de", "German Wikipedia (SemEval-2020 Task 1 models)", _SEMEVAL), assumed=_SEMEVAL_INPUT),
    replace(_nlpl("nlpl-202", 202, "sv", "Swedish Wikipedia (SemEval-2020 Task 1 models)", _SEMEVAL), assumed=_SEMEVAL_INPUT),
    replace(_nlpl("nlpl-203", 203, "la", "Latin (SemEval-2020 Task 1 models)", _SEMEVAL), assumed=_SEMEVAL_INPUT),
    replace(
        _nlpl(
            "nlpl-209", 209, "en", "English (NLPL repository ID 209)", "NLPL repository ID 209, as public code downloads it (20/209.zip)"
        ),
        assumed="training text and input: no source found says what ID 209 was trained on, or whether on lemmas; fed word forms",
    ),
    _nlpl("norelmo-210", 210, "nb", "Norwegian Wikipedia, September 2020, ~160M words (lemmas)", _NORELMO, lemmas=True),
    _nlpl("norelmo-211", 211, "nb", "Norwegian Wikipedia, September 2020, ~160M words (tokens)", _NORELMO),
    _nlpl("norelmo30", 217, "nb", "NorBERT corpus (Wikipedia + Norsk Aviskorpus; Bokmål and Nynorsk), 30,000-word vocabulary", _NORELMO),
    _nlpl("norelmo100", 218, "nb", "NorBERT corpus (Wikipedia + Norsk Aviskorpus; Bokmål and Nynorsk), 100,000-word vocabulary", _NORELMO),
    _contributed_pt("pt-wikipedia", "wikipedia", "options.json", "elmo_pt_weights.hdf5", "Portuguese Wikipedia"),
    replace(
        _contributed_pt("pt-brwac", "brwac", "options.json", "elmo_pt_weights_dgx1.hdf5", "brWaC (Brazilian Portuguese web corpus)"),
        source=_CONTRIB_PT + "; the weights file's name as public notebooks that downloaded it name it (elmo_pt_weights_dgx1.hdf5)",
    ),
    replace(
        _contributed_pt("pt", "", "elmo_pt_options.json", "elmo_pt_weights.hdf5", "Portuguese (the first contributed model; withdrawn)"),
        source=_CONTRIB_PT + "; AllenNLP removed it from its models page in March 2020, and its files may be gone",
        gone="AllenNLP withdrew this model in March 2020: use pt-wikipedia or pt-brwac",
    ),
    ReleasedModel(
        name="embedia-sl",
        language="sl",
        format="allennlp",
        parameters="?",
        download="?",
        trained_on="Slovenian corpora (EMBEDDIA; the handle's page lists them)",
        licence="see its page",
        source="clarin.si repository, handle 11356/1277 (EMBEDDIA's ELMo for seven languages); the archive's URL as public code uses it",
        archive="https://www.clarin.si/repository/xmlui/bitstream/handle/11356/1277/slovenian-elmo.tar.gz",
    ),
    _tf_hub(
        "deeppavlov-ru-wiki",
        "ru",
        "http://files.deeppavlov.ai/deeppavlov_data/elmo_ru-wiki_600k_steps.tar.gz",
        "Russian Wikipedia (600k steps)",
        "Apache-2.0",
        _DEEPPAVLOV,
    ),
    _tf_hub(
        "deeppavlov-ru-news",
        "ru",
        "http://files.deeppavlov.ai/deeppavlov_data/elmo_ru-news_wmt11-16_1.5M_steps.tar.gz",
        "Russian WMT news 2011-2016 (1.5M steps)",
        "Apache-2.0",
        _DEEPPAVLOV,
    ),
    _tf_hub(
        "deeppavlov-ru-twitter",
        "ru",
        "http://files.deeppavlov.ai/deeppavlov_data/elmo_ru-twitter_2013-01_2018-04_600k_steps.tar.gz",
        "Russian Twitter, 2013-01 to 2018-04 (600k steps)",
        "Apache-2.0",
        _DEEPPAVLOV,
    ),
    *(
        _tf_hub(
            f"tfhub-elmo-{version}",
            "en",
            f"https://storage.googleapis.com/tfhub-modules/google/elmo/{version}.tar.gz",
            _BILLION_WORDS,
            "Apache-2.0 (TF Hub)",
            _TFHUB
            + (
                ""
                if version == 2
                else f"; the URL of version {version} follows the bucket's pattern for version 2 and appears in no public code found"
            ),
            "93.6M (original size)",
        )
        for version in (1, 2, 3)
    ),
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
    + _OTHER_FAMILIES
}


def implied_settings(source: Union[str, Path]) -> Dict[str, str]:
    """RETURNS (Dict[str, str]): the elmo component settings what a user names as a biLM implies: input =
    "lemma" for a released model trained on lemmatized text; none for any other name or for a path that
    exists (a folder does not say)."""
    model = None if Path(source).exists() else CATALOGUE.get(str(source))
    return {"input": "lemma"} if model is not None and model.lemmas else {}


def nearest_name(name: str) -> Optional[str]:
    """RETURNS (Optional[str]): the released model's name closest to a misspelt `name`, if one is close."""
    close = difflib.get_close_matches(name, list(CATALOGUE), n=1)
    return close[0] if close else None


SOFTMAX_FORMAT = "allennlp-softmax"  # a biLM's softmax: softmax_weights.hdf5 (softmax/W, softmax/b) + vocab.txt
_SOFTMAX_SOURCE = (
    "the softmax and vocabulary URLs of allenai/allennlp's ELMo perplexity command (DEFAULT_SOFTMAX_FILE, "
    "DEFAULT_VOCAB_FILE) and of public word-sense induction code that downloads them (Amrami & Goldberg 2018); "
    "datasets softmax/W (words x 512) and softmax/b, one word a line in the vocabulary, as that command reads them"
)


def _softmax(of: str, folder: str, stem: str, vocab: str, download: str, words: str) -> ReleasedModel:
    return ReleasedModel(
        name=f"{of}-softmax",
        language="en",
        format=SOFTMAX_FORMAT,
        parameters=f"{words} x 513 (the softmax of {of})",
        download=download,
        trained_on=CATALOGUE[of].trained_on,
        licence="not stated on the page",
        source=_SOFTMAX_SOURCE,
        files=(
            ("softmax_weights.hdf5", f"{_ALLENNLP}/{folder}/{stem}_softmax_weights.hdf5"),
            ("vocab.txt", f"{_ALLENNLP}/{folder}/{vocab}"),
        ),
    )


# The softmax published beside a released biLM (`spacy-elmo download NAME --softmax`): its own lexical substitutes
# (change's sense names and --senses-from substitutes). Downloaded and checked by the same rules as every model.
SOFTMAXES: Dict[str, ReleasedModel] = {
    "original": _softmax(
        "original", "2x4096_512_2048cnn_2xhighway", "elmo_2x4096_512_2048cnn_2xhighway", "vocab-2016-09-10.txt", "~1.6 GB", "793,471"
    ),
    "original-5.5b": _softmax(
        "original-5.5b",
        "2x4096_512_2048cnn_2xhighway_5.5B",
        "elmo_2x4096_512_2048cnn_2xhighway_5.5B",
        "tf_checkpoint/vocab-enwiki-news-500000.txt",
        "~1.0 GB",
        "500,000",
    ),
}


def released_softmax(name: str) -> ReleasedModel:
    """RETURNS (ReleasedModel): the softmax published beside the released biLM `name`; an InputError naming those
    that have one where it has none."""
    released_model(name)
    if name not in SOFTMAXES:
        raise InputError(
            f"{name} was released without its softmax: only {', '.join(SOFTMAXES)} have one (for substitutes, pretrain a "
            "biLM with spacy-elmo pretrain, which keeps its softmax)"
        )
    return SOFTMAXES[name]


def released_model(name: str) -> ReleasedModel:
    """RETURNS (ReleasedModel): the catalogue's entry `name`; an InputError listing the names if none."""
    if name not in CATALOGUE:
        close = nearest_name(name)
        guess = f"Did you mean {close!r}? " if close else ""
        raise InputError(
            f"No released model is called {name!r}. {guess}`spacy-elmo models` lists the names ({', '.join(list(CATALOGUE)[:6])}, ...)."
        )
    return CATALOGUE[name]
