"""The neighbours of a word in context as a table a person reads at a glance (`spacy-elmo neighbours`)."""

from typing import List, Optional, Tuple

from spacy.tokens import Token

from .index import Usage, UsageIndex, describe_layer

_CONTEXT = 60  # characters shown on each side of a usage


def in_context(usage: Usage, width: int = _CONTEXT) -> str:
    """The usage's sentence around the word, the word in [brackets], cut to `width` a side."""
    left = usage.sentence[: usage.start]
    right = usage.sentence[usage.end :]
    if len(left) > width:
        left = "..." + left[-width:].split(" ", 1)[-1]
    if len(right) > width:
        right = right[:width].rsplit(" ", 1)[0] + "..."
    return f"{left}[{usage.text}]{right}".replace("\n", " ")


def neighbours_table(
    index: UsageIndex,
    token: Token,
    n: int = 5,
    same_word: bool = True,
    min_count: int = 1,
    exact: bool = False,
    approximate: bool = False,
) -> str:
    """RETURNS (str): the nearest usages of `token` in context (and which search found them), then its
    context-free neighbours by the token layer (over the indexed word types) and by static vectors
    (where the pipeline has them)."""
    key = index.key_of(token)
    n_same = len(index.rows_of(key))
    searched = n_same if same_word else len(index)
    usages = index.most_similar(token, n=n, same_word=same_word, exact=exact, approximate=approximate) if searched else []
    where = f"{n_same:,} usages of {key!r}" if same_word else f"{len(index):,} usages"
    if index.searches_approximately(searched, exact, approximate):
        assert index.ann is not None
        kind, nprobe, refine = index.ann.describe()
        how = f"approximate search ({kind}, {nprobe} lists probed, {refine} candidates scored exactly; --exact for all)"
    else:
        how = "exact search" + (" (--approximate uses the index's approximate search)" if index.ann is not None else "")
    lines = [
        f"Nearest usages of {token.text!r} in {token.sent.text if token.doc.has_annotation('SENT_START') else token.doc.text!r}",
        f"({describe_layer(list(map(float, index.layer_weights)))}, cosine, among {where} in {index.path}; {how})",
        "",
    ]
    if usages:
        lines.append(f"{'#':>3}  {'cosine':>6}  usage")
        lines += [f"{rank:>3}  {u.score:6.3f}  {in_context(u)}" for rank, u in enumerate(usages, start=1)]
    else:
        lines.append(f"  none: the index holds no usage of {key!r} (--any-word searches the usages of every word)")
    lines += ["", "Context-free neighbours of " + repr(token.text) + ":"]
    lines.append("  token layer:    " + _words(index.type_neighbours(token.text, n, min_count)))
    static = index.static_neighbours(token.text, n)
    lines.append("  static vectors: " + ("none in this pipeline" if static is None else _words(static)))
    return "\n".join(lines)


def _words(pairs: Optional[List[Tuple[str, float]]]) -> str:
    return ", ".join(f"{w} ({s:.2f})" for w, s in pairs or []) or "none"
