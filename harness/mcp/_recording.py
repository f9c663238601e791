"""A scenario's recorded MCP traffic (docs/mcp.md): what the own loop's real MCP servers
answered, at the JSON-RPC level (method and params -> result or error), kept beside the
scenario's cassette as ``<cassette>.mcp.yaml`` and replayed with the servers absent.

vcrpy records HTTP exchanges and cannot record MCP's streams (stdio, streamable HTTP with
SSE), so this file holds the protocol's requests and answers, per server (the ``tools:``
entry that names it), in the order they were made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness._errors import HarnessError
from harness._files import atomic_write
from harness._secrets import Scrubber
from harness.cassettes._format import readable_yaml
from harness.cassettes._matching import body_diff

__all__ = ["MCPRecording", "RecordedCall", "ServerRecording", "error_text", "result_text"]

VERSION = 1
HINT = (
    "If the change is intended, re-record: --record-mode new_episodes adds the new calls, "
    "--record-mode rewrite records them all again."
)


@dataclass
class RecordedCall:
    """One request to an MCP server and its answer: ``result`` or ``error``
    (``{code, message}``, a JSON-RPC error)."""

    method: str
    params: dict[str, Any]
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    played: bool = False

    def as_data(self) -> dict[str, Any]:
        """The call as it is written in the file."""
        data: dict[str, Any] = {"method": self.method, "params": self.params}
        if self.error is not None:
            data["error"] = self.error
        else:
            data["result"] = self.result
        return data


@dataclass
class ServerRecording:
    """The recorded calls of one server, played in order (each once)."""

    name: str
    shown_path: str
    calls: list[RecordedCall] = field(default_factory=list)

    def play(self, method: str, params: dict[str, Any]) -> RecordedCall | None:
        """The first unplayed call with this method and exactly these params (now played)."""
        for call in self.calls:
            if not call.played and call.method == method and call.params == params:
                call.played = True
                return call
        return None

    def play_next(self, method: str) -> bool:
        """Whether the first unplayed call is a ``method`` one (now played): a notification
        the server sent at that point of the recording."""
        call = next((c for c in self.calls if not c.played), None)
        if call is None or call.method != method:
            return False
        call.played = True
        return True

    def add(self, call: RecordedCall) -> None:
        """A call just made live, kept in the recording."""
        call.played = True
        self.calls.append(call)

    def miss(self, method: str, params: dict[str, Any], detail: str = "") -> str:
        """Why a call cannot be replayed: the nearest recorded call and how it differs."""
        # A call of no tool (tools/list) names none: no empty word between the two.
        called = " ".join(filter(None, [method, _label(params)]))
        where = (
            f"MCP recording miss: {called} to server {self.name} has no "
            f"unplayed match in {self.shown_path}."
        )
        if detail:
            return f"{where} {detail}"
        nearest = self._nearest(method, params)
        if nearest is None:
            detail = (
                f"No recorded {method} call to this server; it holds {len(self.calls)} call(s)."
            )
        else:
            index = self.calls.index(nearest)
            played = " (already played)" if nearest.played else ""
            diff = body_diff(
                nearest.params,
                params,
                recorded_name=f"recorded call {index + 1}{played}",
                sent_name="this call",
            )
            detail = f"Nearest recorded call: {index + 1}{played}.\n{diff}"
        return f"{where}\n{detail}\n{HINT}"

    def stub_results(self) -> dict[str, list[dict[str, Any]]]:
        """Per tool, what each of its recorded calls gave, in order, as ``harness freeze``
        writes a stub's per-call results: ``{on_call, returns, is_error}``, or for a
        JSON-RPC error ``{on_call, raise, type: MCPError}`` (the text the model saw)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for call in self.calls:
            if call.method != "tools/call":
                continue
            results = out.setdefault(str(call.params.get("name")), [])
            entry: dict[str, Any] = {"on_call": len(results) + 1}
            if call.error is not None:
                entry.update({"raise": error_text(call.error), "type": "MCPError"})
            else:
                entry["returns"] = result_text(call.result or {})
                if (call.result or {}).get("isError"):
                    entry["is_error"] = True
            results.append(entry)
        return out

    def _nearest(self, method: str, params: dict[str, Any]) -> RecordedCall | None:
        candidates = [c for c in self.calls if c.method == method]
        if not candidates:
            return None

        def score(call: RecordedCall) -> tuple[int, int, int]:
            same_tool = int(call.params.get("name") == params.get("name"))
            sent, recorded = params.get("arguments") or {}, call.params.get("arguments") or {}
            alike = sum(1 for k, v in sent.items() if recorded.get(k) == v)
            return (same_tool, alike, int(not call.played))

        return max(candidates, key=score)


def result_text(result: dict[str, Any]) -> str:
    """A tools/call result as the model reads it: its text blocks (other blocks as JSON)."""
    parts = []
    for block in result.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(json.dumps(block, sort_keys=True))
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], sort_keys=True))
    return "\n".join(parts)


def error_text(error: dict[str, Any]) -> str:
    """A JSON-RPC error as the model reads it (after ``MCPError: ``)."""
    return f"{error.get('message', '')} (JSON-RPC error {error.get('code')})"


def _label(params: dict[str, Any]) -> str:
    name = params.get("name")
    return f"{name}" if name else ""


class MCPRecording:
    """The file of a scenario's MCP traffic: read once, written at the end if it grew."""

    def __init__(self, path: Path, shown_path: str, *, fresh: bool = False) -> None:
        self.path = path
        self.shown_path = shown_path
        self.found = path.is_file() and not fresh
        self.servers: dict[str, ServerRecording] = {}
        self.dirty = False
        if self.found:
            self._load()

    def server(self, name: str) -> ServerRecording:
        """The recording of the server of ``tools:`` entry ``name`` (empty if none)."""
        if name not in self.servers:
            self.servers[name] = ServerRecording(name, self.shown_path)
        return self.servers[name]

    def holds(self, name: str) -> bool:
        """Whether the file has calls of this server."""
        return bool(self.servers.get(name) and self.servers[name].calls)

    def _load(self) -> None:
        try:
            data = yaml.safe_load(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise HarnessError(
                f"{self.shown_path}: cannot read the MCP recording ({_first_line(exc)}); "
                "record it again with --record-mode rewrite"
            ) from None
        servers = data.get("servers") if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            raise HarnessError(
                f"{self.shown_path}: not an MCP recording (no servers: mapping); record it "
                "again with --record-mode rewrite"
            )
        for name, calls in servers.items():
            recording = self.server(str(name))
            for i, call in enumerate(calls or []):
                if not isinstance(call, dict) or not isinstance(call.get("method"), str):
                    raise HarnessError(
                        f"{self.shown_path}: servers.{name}.{i}: a call needs method, params "
                        "and a result or an error; record it again with --record-mode rewrite"
                    )
                recording.calls.append(
                    RecordedCall(
                        call["method"],
                        call.get("params") or {},
                        call.get("result"),
                        call.get("error"),
                    )
                )

    def save(self) -> None:
        """Write the file (atomically, secrets masked) if a call was recorded."""
        if not self.dirty:
            return
        data = {
            "version": VERSION,
            "servers": {
                name: [call.as_data() for call in server.calls]
                for name, server in self.servers.items()
                if server.calls
            },
        }
        header = "# MCP traffic recorded by harness (docs/mcp.md); replayed by harness run.\n"
        atomic_write(self.path, Scrubber().text(header + readable_yaml(data)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
