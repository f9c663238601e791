"""harness: a plugin-based testing and simulation harness for LLM agent loops."""

import importlib
import logging
from typing import Any

from harness._actions import (
    CompleteAction,
    EmptyAction,
    ExecuteToolsAction,
    FinalData,
    FinalResponse,
    MakeLLMRequestAction,
    RunError,
    RunResult,
    SubRun,
    Termination,
    ToolAction,
    ToolCallRecord,
)
from harness._agent import Agent
from harness._config import AgentConfig
from harness._errors import AbortRun, HarnessError, LLMError
from harness._messages import (
    AssistantMessage,
    Conversation,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from harness._run import Run
from harness._secrets import ScrubbingFilter
from harness._streaming import StreamEvent
from harness._subagents import AgentTool
from harness._tools import Tool, ToolResult, tool
from harness.hookspecs import hookimpl
from harness.llm._chunks import LLMChunk, ToolCallDelta

__version__ = "0.1.0"

# A library logs; the application decides where logs go (no "No handlers" fallback output).
logging.getLogger("harness").addHandler(logging.NullHandler())
# Secret values (an API key in an error message, say) are masked before any handler sees them.
logging.getLogger("harness").addFilter(ScrubbingFilter())

# Imported on first use (name -> module): a2a-sdk and httpx; the sandboxes' subprocess
# code; scenario files' YAML, Jinja and jsonschema, which would double the import time of
# `import harness` (and of the pytest plugin, loaded in every pytest session).
_LAZY = {
    "RemoteAgentTool": "harness.a2a._remote",
    "CodeExecutionTool": "harness.sandbox._tool",
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
    "FinalData",
    "FinalResponse",
    "HarnessError",
    "LLMChunk",
    "LLMError",
    "MakeLLMRequestAction",
    "RemoteAgentTool",
    "Run",
    "RunError",
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
