"""What a training config's pipeline must hold for its ELMo listeners: an `elmo` component before each component that
listens to one. Checked once the pipeline is built (`[nlp] after_pipeline_creation`, which the configs of
`spacy-elmo init-config` set), so that `spacy train` says a missing `elmo` in one line, not at the first update."""

from typing import Callable, List, Tuple

from spacy.language import Language
from spacy.util import registry
from thinc.api import Model

from ..layers.listener import ElmoListener
from .config_errors import InitializeError


def listeners_without_elmo(nlp: Language) -> List[Tuple[str, str]]:
    """RETURNS (List[Tuple[str, str]]): (component, upstream) for each ELMo listener that no `elmo` component before
    its component feeds: upstream "*" takes any, a name that one."""
    from .component import Elmo

    missing = []
    before: List[str] = []
    for name, proc in nlp.pipeline:
        if isinstance(proc, Elmo):
            before.append(name)
        model = getattr(proc, "model", None)
        if not isinstance(model, Model) or isinstance(proc, Elmo):
            continue
        for node in model.walk():
            if isinstance(node, ElmoListener) and not (before if node.upstream_name == "*" else node.upstream_name in before):
                missing.append((name, node.upstream_name))
                break
    return missing


@registry.callbacks("spacy-elmo.check_listeners.v1")
def check_listeners_v1() -> Callable[[Language], Language]:
    """A callback for `[nlp] after_pipeline_creation`: refuse, in one line, a pipeline whose ELMo listeners have no
    `elmo` component before them (the component left out of `[nlp] pipeline`, or placed after its listener)."""

    def check(nlp: Language) -> Language:
        from .component import Elmo

        missing = listeners_without_elmo(nlp)
        if missing:
            name, upstream = missing[0]
            wanted = "an 'elmo' component" if upstream == "*" else f"the '{upstream}' component"
            disabled = [n for n, proc in nlp.components if isinstance(proc, Elmo) and n in nlp.disabled and upstream in ("*", n)]
            if disabled:  # there, but disabled: say so, not that it is missing
                raise InitializeError(
                    title=f"[{name}] listens to {wanted}, and '{disabled[0]}' is in the pipeline but disabled ([nlp] disabled, "
                    f"or --nlp.disabled): its listeners need its layers. Leave '{disabled[0]}' out of disabled, or train "
                    f"without ELMo: spacy-elmo init-config CONFIG --pipeline {name} --baseline"
                )
            raise InitializeError(
                title=f"[{name}] listens to {wanted} (spacy-elmo.ElmoListener.v2 in its model), and the pipeline has none "
                f"before it: put '{'elmo' if upstream == '*' else upstream}' in [nlp] pipeline before '{name}' (with its "
                "[components] block, as spacy-elmo init-config writes it), or train without ELMo: spacy-elmo init-config "
                f"CONFIG --pipeline {name} --baseline"
            )
        return nlp

    return check
