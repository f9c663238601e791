"""Everything a plugin author imports: ``from harness.plugin import hookimpl, Run, ...``.

One import for the hook marker and the types the hooks, planners, LLM sources, detectors,
user simulators, target kinds, expectation checks and report sections receive or return,
so that a plugin never reaches into harness's modules (which may move). The hooks
themselves are documented in docs/plugins.md; ``harness.hookspecs`` declares them.
"""

from harness import simclock
from harness._sections import Section, Table
from harness.actions import (
    CompleteAction,
    EmptyAction,
    ExecuteToolsAction,
    FinalResponse,
    MakeLLMRequestAction,
    ToolAction,
    ToolCallRecord,
)
from harness.checks import CheckContext
from harness.config import AgentConfig, DetectorSettings
from harness.detectors.base import Stuck
from harness.errors import AbortRun
from harness.external.targets import TargetCall, TargetError
from harness.hookspecs import hookimpl
from harness.llm.base import LLMRequest, LLMResponse
from harness.llm.chunks import LLMChunk, ToolCallDelta
from harness.messages import AssistantMessage, Conversation, ToolCall
from harness.modelwires import WireVendor
from harness.run import Run, current_run
from harness.secrets import scrub_text
from harness.tools import Tool, ToolResult, tool
from harness.users import UserContext

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
