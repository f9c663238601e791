"""LLM sources as the engine knows them: the protocol (``base``), the pieces of a streamed
reply (``chunks``), scripted replies (``script``, ``scripted``) and a scenario's ``llm:``
section (``config``). Sources on a vendor's SDK are ``harness.providers``; the server that
answers from a script is ``harness.serve``."""

from harness.llm.base import LLM, LLMRequest, LLMResponse
from harness.llm.scripted import ScriptedLLM

__all__ = ["LLM", "LLMRequest", "LLMResponse", "ScriptedLLM"]
