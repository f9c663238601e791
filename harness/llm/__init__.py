"""LLM sources as the engine knows them: the protocol (``base``), the pieces of a streamed
reply (``chunks``), scripted replies (``script``, ``scripted``) and a scenario's ``llm:``
section (``config``). Sources on a vendor's SDK are ``harness.providers``; the server that
answers from a script is ``harness.serve``."""

from harness.llm._base import LLM, LLMRequest, LLMResponse
from harness.llm._config import LLMConfig, LLMContext
from harness.llm._scripted import ScriptedLLM

__all__ = ["LLM", "LLMConfig", "LLMContext", "LLMRequest", "LLMResponse", "ScriptedLLM"]
