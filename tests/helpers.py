"""Tiny models built in the tests themselves."""

from spacy_elmo.bilm import BiLM, ElmoOptions

TINY_FILTERS = ((1, 4), (2, 8), (3, 8))


def tiny_options(**overrides) -> ElmoOptions:
    settings = dict(
        cell_dim=24,
        projection_dim=8,
        n_layers=2,
        cell_clip=3.0,
        proj_clip=3.0,
        use_skip_connections=True,
        char_embed_dim=4,
        filters=TINY_FILTERS,
        n_highway=1,
        activation="relu",
    )
    settings.update(overrides)
    return ElmoOptions(**settings)


def tiny_bilm(seed: int = 0, **overrides) -> BiLM:
    import torch

    torch.manual_seed(seed)
    bilm = BiLM(tiny_options(**overrides))
    # Random biases everywhere, so that no mapping error hides behind a zero.
    with torch.no_grad():
        for name, p in bilm.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    return bilm.eval()


def tiny_model_config(**settings) -> dict:
    """The `spacy-elmo.BiLM.v2` block of the tiny biLM (one source for every test config);
    settings: window_size, punct_sentences."""
    from spacy_elmo.layers import bilm_config

    return bilm_config(tiny_options(), **settings)


def tiny_overrides(prefix: str) -> dict:
    """Config overrides that turn the biLM hyperparameters at `prefix` into the tiny biLM's."""
    return {f"{prefix}.{key}": value for key, value in tiny_options().to_config().items()}


def vocab_of(sentences, max_size: int, min_count: int = 1):
    """The Vocabulary of tokenized sentences, counted here: the reference for the vocabularies
    that preparation builds from counts."""
    from collections import Counter

    from spacy_elmo.training.vocab import Vocabulary

    sentences = list(sentences)
    counts = Counter(word for sentence in sentences for word in sentence)
    return Vocabulary.from_sentence_counts(counts, len(sentences), max_size, min_count)


def pool_batches(pool, batch_tokens: int, seed: int):
    """The reference for one pool of the batch plan: its length batches, shuffled by `seed`."""
    import random

    from spacy_elmo.training.batches import length_batches

    batches = length_batches(pool, batch_tokens)
    random.Random(seed).shuffle(batches)
    return batches


def wikipedia_sentences(shared_data, n: int) -> list:
    """The first `n` lines of the shared Wikipedia text with 4-59 tokens, split on whitespace."""
    import gzip

    sentences = []
    with gzip.open(shared_data / "raw" / "enwiki-20M.txt.gz", "rt", encoding="utf8") as lines:
        for line in lines:
            if 3 < len(line.split()) < 60:
                sentences.append(line.split())
            if len(sentences) == n:
                break
    return sentences


def write_ner_docbins(folder, sizes: dict, first: dict = None) -> None:
    """A user's NER data: for each file name in `sizes`, that many Docs "Alice Smith went to Paris on day N ." with a
    PERSON and a GPE, N counted from `first[name]` (0 by default)."""
    import spacy
    from spacy.tokens import DocBin, Span

    nlp = spacy.blank("en")
    for name, size in sizes.items():
        docs = DocBin()
        start = (first or {}).get(name, 0)
        for i in range(start, start + size):
            doc = nlp(f"Alice Smith went to Paris on day {i} .")
            doc.ents = [Span(doc, 0, 2, label="PERSON"), Span(doc, 4, 5, label="GPE")]
            docs.add(doc)
        docs.to_disk(folder / name)
