"""Training methods and frozen baselines, one module each; ``build_method`` builds one by kind.

Which kinds exist, the class implementing each, and what the workflow needs to know about a kind
(does it train, on which corpus, in which precision did its authors train) are units: each module's
``<module>.units.yaml`` sidecar (sentrepro.code.units; plug-ins come from installed packages). The modules are
imported on first use, not here: the code fingerprint of a workflow job (``sentrepro.code.codedeps`` follows
static imports) then covers the common code plus the job's own method unit, so editing one method's code
reruns that method's jobs only (``method_entry`` names the module for a job).
"""

from __future__ import annotations

import functools

from sentrepro.planning import registry
from sentrepro.methods.base import Method


def method_entry(kind: str) -> str:
    """The module implementing ``kind`` (``sentrepro.methods.simcse``): with the command's entry point,
    what a job of that kind runs."""
    return registry.implementation_module(registry.method(kind).implementation)


@functools.lru_cache(maxsize=None)
def method_class(kind: str) -> type[Method]:
    """The class implementing ``kind``, imported on first use."""
    implementation = registry.method(kind).implementation
    cls = registry.load_implementation(implementation)
    if cls.kind != kind:
        raise ValueError(f"{registry.unit_entry('methods', kind)}: {implementation} implements kind '{cls.kind}', not '{kind}'")
    return cls


def build_method(kind: str, params: dict, family: str, tokenizer) -> Method:
    return method_class(kind)(params, family, tokenizer)
