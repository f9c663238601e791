"""LLM sources: scripted replies, the OpenAI SDK (live or cassette), and a test server."""

from harness.llm.base import LLM, LLMRequest, LLMResponse
from harness.llm.scripted import ScriptedLLM

__all__ = ["LLM", "LLMRequest", "LLMResponse", "ScriptedLLM"]
