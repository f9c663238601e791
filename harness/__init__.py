"""harness: a plugin-based testing and simulation harness for LLM agent loops."""

import importlib
import logging
from typing import Any

from harness.actions import (
    CompleteAction,
    EmptyAction,
    ExecuteToolsAction,
    FinalResponse,
    MakeLLMRequestAction,
    RunResult,
    SubRun,
    Termination,
    ToolAction,
    ToolCallRecord,
)
from harness.agent import Agent
from harness.config import AgentConfig
from harness.errors import AbortRun, HarnessError, LLMError
from harness.hookspecs import hookimpl
from harness.llm.chunks import LLMChunk, ToolCallDelta
from harness.messages import (
    AssistantMessage,
    Conversation,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from harness.run import Run
from harness.secrets import ScrubbingFilter
from harness.streaming import StreamEvent
from harness.subagents import AgentTool
from harness.tools import Tool, ToolResult, tool

__version__ = "0.1.0"

# A library logs; the application decides where logs go (no "No handlers" fallback output).
logging.getLogger("harness").addHandler(logging.NullHandler())
# Secret values (an API key in an error message, say) are masked before any handler sees them.
logging.getLogger("harness").addFilter(ScrubbingFilter())

# Imported on first use (name -> module): a2a-sdk and httpx; the sandboxes' subprocess
# code; scenario files' YAML, Jinja and jsonschema, which would double the import time of
# `import harness` (and of the pytest plugin, loaded in every pytest session).
_LAZY = {
    "RemoteAgentTool": "harness.a2a.remote",
    "CodeExecutionTool": "harness.sandbox.tool",
    "arun_scenario": "harness.scenario",
    "load_scenario": "harness.scenario",
    "run_scenario": "harness.scenario",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = [
    "AbortRun",
    "Agent",
    "AgentConfig",
    "AgentTool",
    "AssistantMessage",
    "CodeExecutionTool",
    "CompleteAction",
    "Conversation",
    "EmptyAction",
    "ExecuteToolsAction",
    "FinalResponse",
    "HarnessError",
    "LLMChunk",
    "LLMError",
    "MakeLLMRequestAction",
    "RemoteAgentTool",
    "Run",
    "RunResult",
    "StreamEvent",
    "SubRun",
    "SystemMessage",
    "Termination",
    "Tool",
    "ToolAction",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallRecord",
    "ToolMessage",
    "ToolResult",
    "UserMessage",
    "__version__",
    "arun_scenario",
    "hookimpl",
    "load_scenario",
    "run_scenario",
    "tool",
]
