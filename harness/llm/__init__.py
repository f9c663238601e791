"""LLM sources as the engine knows them: the protocol (``base``), the pieces of a streamed
reply (``chunks``), scripted replies (``script``, ``scripted``) and a scenario's ``llm:``
section (``config``). Sources on a vendor's SDK are ``harness.providers``; the server that
answers from a script is ``harness.serve``."""

import importlib
from typing import Any

from harness.llm._base import LLM, LLMRequest, LLMResponse
from harness.llm._scripted import ScriptedLLM

__all__ = ["LLM", "LLMConfig", "LLMContext", "LLMRequest", "LLMResponse", "ScriptedLLM"]

# Imported on first use (name -> module): the `llm:` section's models and its faults'
# would be built by every `import harness` (a twentieth of its cost), which needs neither.
_LAZY = {"LLMConfig": "harness.llm._config", "LLMContext": "harness.llm._config"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
