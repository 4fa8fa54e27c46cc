"""Training methods and frozen baselines, one module each; ``build_method`` picks one by kind."""

from __future__ import annotations

from sentrepro.methods.base import Method
from sentrepro.methods.frozen import Frozen
from sentrepro.methods.simcse import SimCSE

METHODS: dict[str, type[Method]] = {cls.kind: cls for cls in (SimCSE, Frozen)}

# Source modules (relative to src/sentrepro) whose code a method's results depend on; used as a
# rule param so an edit reruns that method's jobs only.
COMMON_MODULES = ["methods/base.py", "backbones.py", "encoding.py"]
METHOD_MODULES: dict[str, list[str]] = {
    "simcse": ["methods/simcse.py", "train.py", "optim.py", "tokenize.py"],
    "frozen": ["methods/frozen.py"],
}


def build_method(kind: str, params: dict, family: str, tokenizer) -> Method:
    try:
        cls = METHODS[kind]
    except KeyError:
        raise ValueError(f"unknown method kind '{kind}' (known: {', '.join(sorted(METHODS))})") from None
    return cls(params, family, tokenizer)


def method_modules(kind: str) -> list[str]:
    return COMMON_MODULES + METHOD_MODULES[kind]
