"""Everything a plugin author imports: ``from harness.plugin import hookimpl, Run, ...``.

One import for the hook marker and the types the hooks, planners, LLM sources, detectors,
user simulators, target kinds, expectation checks and report sections receive or return,
so that a plugin never reaches into harness's modules (which may move). The hooks
themselves are documented in docs/plugins.md; ``harness.hookspecs`` declares them.
"""

from harness import simclock
from harness._actions import (
    CompleteAction,
    EmptyAction,
    ExecuteToolsAction,
    FinalResponse,
    MakeLLMRequestAction,
    ToolAction,
    ToolCallRecord,
)
from harness._checks import CheckContext
from harness._config import AgentConfig, DetectorSettings
from harness._errors import AbortRun
from harness._messages import AssistantMessage, Conversation, ToolCall
from harness._modelwires import WireVendor
from harness._run import Run, current_run
from harness._secrets import scrub_text
from harness._sections import Section, Table
from harness._tools import Tool, ToolResult, tool
from harness._users import UserContext
from harness.detectors._base import Stuck
from harness.external._targets import TargetCall, TargetError
from harness.hookspecs import hookimpl
from harness.llm._base import LLMRequest, LLMResponse
from harness.llm._chunks import LLMChunk, ToolCallDelta

__all__ = [
    "AbortRun",
    "AgentConfig",
    "AssistantMessage",
    "CheckContext",
    "CompleteAction",
    "Conversation",
    "DetectorSettings",
    "EmptyAction",
    "ExecuteToolsAction",
    "FinalResponse",
    "LLMChunk",
    "LLMRequest",
    "LLMResponse",
    "MakeLLMRequestAction",
    "Run",
    "Section",
    "Stuck",
    "Table",
    "TargetCall",
    "TargetError",
    "Tool",
    "ToolAction",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallRecord",
    "ToolResult",
    "UserContext",
    "WireVendor",
    "current_run",
    "hookimpl",
    "scrub_text",
    "simclock",
    "tool",
]
