"""The ``tools:`` entries of a scenario file: stubs, real tools, sub-agents, code tools,
remote agents."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)

from harness.scenario._fields import CLOSED
from harness.scenario._injection import Inject, InjectSpec
from harness.simclock import MAX_SECONDS

__all__ = [
    "CodeSpec",
    "MCPSpec",
    "ParamSpec",
    "RemoteSpec",
    "RugPullSpec",
    "ToolErrorSpec",
    "ToolResultSpec",
    "ToolSpec",
]


class ParamSpec(BaseModel):
    """A short-form parameter with details: ``{type: int, default: 3, description: ...}``."""

    model_config = CLOSED
    type: str = "str"
    default: Any = None
    description: str | None = None

    @property
    def has_default(self) -> bool:
        """Whether the parameter is optional (a default was given, even null)."""
        return "default" in self.model_fields_set


class ToolResultSpec(BaseModel):
    """What the Nth call of a stub returns (``results:``), and how: slowly, padded."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    on_call: int = Field(ge=1)
    returns: Any = Field(
        default=None, description="the call's result (default: the tool's returns)"
    )
    is_error: bool = Field(
        default=False,
        description="the result is an error result, its text exactly as given (an MCP "
        "isError result; freeze writes recorded ones this way)",
    )
    latency: float = Field(
        default=0.0,
        ge=0,
        le=MAX_SECONDS,
        description="simulated seconds this call takes beyond the tool's latency (a slow call)",
    )
    pad_to: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description="the result's text repeated to this many characters (a huge result)",
    )

    @property
    def has_returns(self) -> bool:
        """Whether the entry gives the call's result (else the tool's usual one)."""
        return "returns" in self.model_fields_set


class ToolErrorSpec(BaseModel):
    """The Nth call of a stub raises (``errors:``); without ``on_call``, every call does."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)
    on_call: int | None = Field(
        default=None, ge=1, description="the call that raises (1-based); omitted: every call"
    )
    raise_: str = Field(default="", alias="raise", description="the exception message")
    type: str = Field(default="ToolError", description="the exception type name shown to the model")
    after: float = Field(
        default=0.0,
        ge=0,
        le=MAX_SECONDS,
        description="simulated seconds the call runs before it raises (a call timing out: "
        "type: TimeoutError, after: 30)",
    )
    mcp: int | Literal["disconnect", "hang"] | None = Field(
        default=None,
        description="served over MCP (docs/mcp.md): a JSON-RPC error with this code and the "
        "message, instead of an isError result; disconnect: the server drops the connection; "
        "hang: the call is never answered (the client's own timeout fires)",
    )

    @model_validator(mode="after")
    def _type_name(self) -> ToolErrorSpec:
        if not self.type.isidentifier():
            raise ValueError(f"type {self.type!r} is not a valid exception name")
        if not self.raise_ and self.mcp not in ("disconnect", "hang"):
            raise ValueError("raise: give the error's message")
        return self


class RugPullSpec(BaseModel):
    """The tool's definition changes after a call, and the MCP client is told with
    ``notifications/tools/list_changed`` (a "rug pull"; docs/mcp.md)."""

    model_config = CLOSED
    after_call: int = Field(default=1, ge=1, description="the call after which it changes")
    description: str | None = Field(default=None, description="the new description")
    schema_: dict[str, Any] | None = Field(
        default=None, alias="schema", description="the new JSON Schema of the arguments"
    )


class MCPSpec(BaseModel):
    """A real MCP server whose tools the own loop uses (docs/mcp.md): started with
    ``command`` (stdio) or reached at ``url`` (streamable HTTP); recorded into the
    scenario's cassette and replayed with the server absent."""

    model_config = CLOSED
    command: list[str] | None = Field(
        default=None, min_length=1, description="argv of a stdio server, run in the project root"
    )
    url: str | None = Field(default=None, description="a streamable HTTP server's http(s):// URL")
    only: list[str] | None = Field(
        default=None, description="the server's tools to use (default: all of them)"
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="environment variables for a command's process"
    )
    timeout: float = Field(
        default=30.0,
        gt=0,
        description="wall seconds for the server to start and for each call; then the run "
        "ends in tool_error",
    )

    @model_validator(mode="after")
    def _one_source(self) -> MCPSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (an HTTP server)")
        if self.url is not None and not _URL.match(self.url):
            raise ValueError(f"{self.url!r} is not an http:// or https:// address")
        return self


class CodeSpec(BaseModel):
    """A code-execution tool (``harness.CodeExecutionTool``): Python the model writes, run
    in a sandbox; its arguments are ``{code: str}``."""

    model_config = CLOSED
    sandbox: Literal["auto", "process", "bubblewrap", "docker"] = Field(
        default="auto",
        description="the sandbox backend; auto: the strongest that works here (pin one for "
        "results that must not depend on the machine)",
    )
    timeout: float = Field(
        default=10.0, gt=0, description="wall seconds before the code is stopped"
    )
    memory_mb: int = Field(default=512, ge=16, description="address space of the code, in MB")
    output_bytes: int = Field(default=64_000, ge=1, description="stdout and stderr kept, each")
    processes: int = Field(default=32, ge=1, description="processes and threads at once")


_URL = re.compile(r"^https?://[^\s/]+")


class RemoteSpec(BaseModel):
    """A remote A2A agent as a tool: at ``url``, or served by harness from ``scenario``."""

    model_config = CLOSED
    url: str | None = Field(default=None, description="the agent's http(s):// address")
    scenario: str | None = Field(
        default=None,
        description="a scenario file (relative to this one) that harness serves as an A2A "
        "agent on 127.0.0.1 for as long as the process runs",
    )
    timeout: float = Field(default=60.0, gt=0, description="wall seconds for one call")

    @model_validator(mode="after")
    def _one_source(self) -> RemoteSpec:
        if (self.url is None) == (self.scenario is None):
            raise ValueError("give either url (a running agent) or scenario (a file to serve)")
        if self.url is not None:
            _check_url(self.url)
        return self


def _check_url(value: str) -> str:
    if not _URL.match(value):
        raise ValueError(
            f"{value!r} is not an http:// or https:// address; write remote: http://HOST:PORT, "
            "or remote: {scenario: FILE} to serve a scenario file"
        )
    return value


# ``remote: URL`` is short for ``remote: {url: URL}``.
_RemoteURL = Annotated[
    str,
    AfterValidator(_check_url),
    WithJsonSchema({"type": "string", "pattern": _URL.pattern}),
]


class ToolSpec(BaseModel):
    """A tool stub (scripted results), a real tool (``use:``), a sub-agent (``agent:``), a
    code-execution tool (``code:``) or a remote agent (``remote:``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    description: str | None = None
    parameters: dict[str, str | ParamSpec] | None = Field(
        default=None, description="short form: {name: type} or {name: {type, default, description}}"
    )
    schema_: dict[str, Any] | None = Field(
        default=None, alias="schema", description="JSON Schema of the arguments"
    )
    returns: Any = Field(default=None, description="Jinja templates over args, call, faker")
    results: list[ToolResultSpec] | None = Field(
        default=None, description="per-call results (overrides returns for those calls)"
    )
    latency: float = Field(
        default=0.0,
        ge=0,
        le=MAX_SECONDS,
        description="simulated seconds per call (stubs and use: tools; a year at most)",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_SECONDS,
        description="simulated seconds: a call whose latency exceeds it fails with "
        "TimeoutError when its timeout runs out",
    )
    errors: list[ToolErrorSpec] = Field(
        default_factory=list, description="calls that raise instead (stubs and use: tools)"
    )
    use: str | None = Field(
        default=None, description="a real tool: 'module:function' or a registered tool name"
    )
    strict: bool = Field(default=False, description="send strict: true to the API")
    ends_run: bool = Field(
        default=False,
        description="a call to this tool that runs ends the run, completed, with the call's "
        "arguments as final.data.output: an output tool (pydantic-ai's final_result, the "
        "Agents SDK's stop_on_first_tool)",
    )
    agent: str | None = Field(
        default=None, description="a sub-agent of the agents: section, called with {task}"
    )
    code: CodeSpec | None = Field(
        default=None,
        description="a code-execution tool, called with {code}: Python run in a sandbox",
    )
    remote: _RemoteURL | RemoteSpec | None = Field(
        default=None,
        description="a remote A2A agent: its URL, or {url: URL, timeout: S}, or "
        "{scenario: FILE} to serve another scenario file as one",
    )

    inject: Inject | None = Field(
        default=None,
        description="prompt injection: TEXT, {text, on_call, into}, or a list of them, "
        "appended to the result (or the description)",
    )
    rug_pull: RugPullSpec | None = Field(
        default=None,
        description="served over MCP: the definition changes after a call and the client is "
        "told (notifications/tools/list_changed)",
    )
    mcp: MCPSpec | None = Field(
        default=None,
        description="a real MCP server's tools for the own loop (this entry names the server)",
    )

    @property
    def remote_spec(self) -> RemoteSpec | None:
        """``remote`` in its long form (``remote: URL`` is ``{url: URL}``)."""
        if isinstance(self.remote, str):
            return RemoteSpec(url=self.remote)
        return self.remote

    @property
    def injections(self) -> list[InjectSpec]:
        """``inject`` as a list."""
        return self.inject or []

    @model_validator(mode="after")
    def _consistent(self) -> ToolSpec:
        if self.parameters is not None and self.schema_ is not None:
            raise ValueError(
                "give either parameters (short form) or schema (JSON Schema), not both"
            )
        kinds = [
            k for k in ("use", "agent", "code", "remote", "mcp") if getattr(self, k) is not None
        ]
        if len(kinds) > 1:
            raise ValueError(f"a tool is one thing: give one of {', '.join(kinds)}")
        if kinds and kinds[0] in ("agent", "code"):
            extra = [
                k
                for k in ("parameters", "schema_", "returns", "results")
                if getattr(self, k) is not None
            ]
            if extra:
                names = ", ".join(k.rstrip("_") for k in extra)
                what = "runs a sub-agent" if kinds[0] == "agent" else "runs the model's code"
                raise ValueError(
                    f"a tool with `{kinds[0]}:` {what}, with fixed arguments: remove {names}"
                )
        if self.mcp is not None:
            extra = [k for k in self.model_fields_set if k != "mcp"]
            if extra:
                names = ", ".join(sorted(k.rstrip("_") for k in extra))
                raise ValueError(
                    f"an `mcp:` entry brings in a server's tools as the server defines them: "
                    f"remove {names}"
                )
        if self.use is not None:
            extra = [
                k
                for k in ("parameters", "schema_", "returns", "results")
                if getattr(self, k) is not None
            ]
            if extra:
                names = ", ".join(k.rstrip("_") for k in extra)
                raise ValueError(f"a `use:` tool is real Python: remove {names}")
        if self.remote is not None:
            extra = [
                k
                for k in ("parameters", "schema_", "returns", "results", "use", "timeout")
                if getattr(self, k) is not None
            ]
            extra += [k for k in ("latency", "errors", "strict") if getattr(self, k)]
            if extra:
                names = ", ".join(k.rstrip("_") for k in extra)
                raise ValueError(
                    f"a `remote:` tool is another agent (its parameter is task): remove {names}"
                    + ("; its time limit is remote.timeout" if "timeout" in extra else "")
                )
        return self
