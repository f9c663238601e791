"""A real MCP server's tools in harness's own loop (docs/mcp.md), through the ``mcp`` SDK's
``Client``: started with a command (stdio) or reached at a URL (streamable HTTP), every
request recorded at the JSON-RPC level (``harness.mcp._recording``) and replayed from there
with the server absent.

A server that fails as a transport (exits, writes what is not JSON-RPC, does not answer
within its timeout) or a replayed call its recording does not hold raises
``ToolServerError``: the run ends in ``tool_error`` with one line, never a traceback or a
hang. The connection lives in a task of its own, so that a transport failing inside the
SDK's task groups cancels that task only, never the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from harness._errors import ToolServerError, printable
from harness._tools import Tool, ToolResult
from harness.mcp._recording import (
    MCPRecording,
    RecordedCall,
    ServerRecording,
    error_text,
    result_text,
)

__all__ = ["MCPServerConfig", "MCPServers", "MCPTools"]

# The notification a server sends when its tools changed, kept in the recording where it
# came (after the call it came with), to be met again on replay.
LIST_CHANGED = "notifications/tools/list_changed"
# Each recorded source of calls: replay only, replay then live for misses, live only.
_REPLAY, _NEW_EPISODES, _LIVE = "replay", "new_episodes", "live"
# Pages of one tools/list: far more than a server needs to list its tools, far fewer than
# a server handing out a new nextCursor each time would make (16,344 pages and a 16 MB
# recording in 15 s).
MAX_PAGES = 100
# The end of a server's stderr that is kept (its last line says why it stopped).
STDERR_KEPT = 64 * 1024


class _StderrTail:
    """A server's stderr, read from a pipe as it comes, its last ``STDERR_KEPT`` bytes
    kept: a server writing 400 MB to stderr cost harness 925 MB when it was kept whole."""

    def __init__(self) -> None:
        read, write = os.pipe()
        os.set_blocking(read, False)
        self._read = read
        # Handed to the process as its stderr (the SDK's errlog), closed by close().
        self.writer: TextIO = os.fdopen(write, "w")
        self.tail = bytearray()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(read, self._take)

    def _take(self) -> None:
        try:
            data = os.read(self._read, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(self._read)
            return
        self.tail += data
        if len(self.tail) > STDERR_KEPT:
            del self.tail[: len(self.tail) - STDERR_KEPT]

    def last_line(self) -> str:
        """Its last line that says something, at most 200 characters, printable."""
        self._take()  # what came since the loop last looked (a pipe holds 64 KiB: all of it)
        text = self.tail.decode("utf-8", errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return printable(lines[-1][:200]) if lines else ""

    def close(self) -> None:
        """Stop reading and close both ends."""
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self._read)
        with contextlib.suppress(OSError):
            os.close(self._read)
        with contextlib.suppress(OSError):
            self.writer.close()


@dataclass(frozen=True)
class MCPServerConfig:
    """One ``tools:`` entry's server: ``command`` (argv) or ``url``; ``only`` its tools."""

    name: str
    command: list[str] | None = None
    url: str | None = None
    only: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = 30.0

    @property
    def shown(self) -> str:
        """The server as a person recognises it: ``NAME (argv)`` or ``NAME (URL)``."""
        what = " ".join(self.command) if self.command else _without_userinfo(str(self.url))
        return f"{self.name} ({what})"


def _without_userinfo(url: str) -> str:
    """The URL without a ``user:password@`` part, which no message may show."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


# The mcp SDK's stdio transport stops a server that does not exit in bounded steps
# (mcp.client.stdio): a flush, the server's grace once its stdin closes, SIGTERM to
# SIGKILL, seeing it die. Their values in mcp 2.3, for a release that renames them.
_SDK_STEPS = {
    "_WRITER_FLUSH_TIMEOUT": 0.5,
    "PROCESS_TERMINATION_TIMEOUT": 2.0,
    "FORCE_KILL_TIMEOUT": 2.0,
    "_KILL_REAP_TIMEOUT": 2.0,
}


def _sdk_shutdown() -> float:
    """The longest the SDK takes to stop a server (its steps), with a second to spare."""
    from mcp.client import stdio

    total = 1.0
    for name, known in _SDK_STEPS.items():
        value = getattr(stdio, name, known)
        total += value if isinstance(value, int | float) else known
    return total


class _Live:
    """A live connection to one server, in a task of its own."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.client: Any = None
        self.broken: str | None = None
        self.changed = False  # the server said notifications/tools/list_changed
        self._broken = asyncio.Event()
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._stderr: _StderrTail | None = None
        self._task: asyncio.Task[None] | None = None
        import anyio

        # Around the connection: cancelled by close() while the handshake still waits.
        # Made here, so that a close() before _keep has entered it cancels it all the same.
        self._starting = anyio.CancelScope()

    async def start(self) -> None:
        """Start the server and complete MCP's handshake, within the timeout."""
        self._task = asyncio.create_task(self._keep(), name=f"mcp server {self.config.name}")
        await self._wait(self._ready.wait(), "start")

    async def _keep(self) -> None:
        try:
            from mcp import Client

            # Cancelled by close() while the handshake is still waiting (a server that
            # answered garbage): anyio's cancellation, which lets the SDK's transport stop
            # the process its bounded way (a native task cancel cuts that short).
            with self._starting:
                async with Client(
                    self._transport(), message_handler=self._message, cache=None
                ) as client:
                    self.client = client
                    self._ready.set()
                    await self._closing.wait()
        except Exception as exc:  # the transport failed: said once, by _why
            self._fail(self._why(exc))
        if not self._closing.is_set():
            # The SDK's task group cancelled the wait when its transport ended.
            self._fail(self._why(None))

    def _transport(self) -> Any:
        config = self.config
        if config.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(config.url)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert config.command
        # Closed by close(): it outlives this call, as the process does.
        self._stderr = _StderrTail()
        params = StdioServerParameters(
            command=config.command[0], args=config.command[1:], env=config.env, cwd=config.cwd
        )
        return stdio_client(params, errlog=self._stderr.writer)

    async def _message(self, message: Any) -> None:
        from mcp import types

        if isinstance(message, types.ToolListChangedNotification):
            self.changed = True  # read by the call it came with (MCPTools.call)
            return
        if isinstance(message, Exception):
            # The SDK hands the transport's faults here: a line on stdout that is not
            # JSON-RPC, say. The request waiting for an answer would wait until its timeout.
            self._fail(f"answered what is not MCP: {_unparsed(message)}")

    def _fail(self, reason: str) -> None:
        if self.broken is None:
            self.broken = reason
        self._broken.set()

    def _why(self, exc: BaseException | None) -> str:
        leaves = list(_leaves(exc)) if exc is not None else []
        text = printable("; ".join(_first_line(e) for e in leaves) or "it ended")
        if any(isinstance(e, FileNotFoundError | PermissionError) for e in leaves):
            return f"could not be started: {text}"
        last = self._last_stderr()
        said = f" (its last line on stderr: {last})" if last else ""
        return f"closed the connection: {text}{said}"

    def _last_stderr(self) -> str:
        return self._stderr.last_line() if self._stderr is not None else ""

    async def _wait(self, awaitable: Any, what: str) -> Any:
        """``awaitable``'s value, unless the server breaks or the timeout runs out first."""
        work = asyncio.ensure_future(awaitable)
        broken = asyncio.ensure_future(self._broken.wait())
        waiting: set[asyncio.Future[Any]] = {work, broken}
        if self._task is not None:
            waiting.add(self._task)
        try:
            done, _ = await asyncio.wait(
                waiting, timeout=self.config.timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            broken.cancel()
        if work in done and self.broken is None:
            return work.result()
        work.cancel()
        if self.broken is None and not done:
            self._fail(f"did not answer {what} within {self.config.timeout:g} s (its mcp: timeout)")
        elif self.broken is None:
            self._fail("closed the connection")
        raise ToolServerError(
            f"MCP server {self.config.shown} {self.broken}", server=self.config.name
        )

    async def request(self, method: str, params: dict[str, Any]) -> RecordedCall:
        """Send one request; its answer as a recorded call (a JSON-RPC error included)."""
        from mcp.shared.exceptions import MCPError

        if self.broken is not None:
            raise ToolServerError(
                f"MCP server {self.config.shown} {self.broken}", server=self.config.name
            )
        try:
            result = await self._wait(self._send(method, params), method)
        except MCPError as exc:
            if exc.error.code == -32000 and "closed" in exc.error.message.lower():
                self._fail(self._why(exc))
                raise ToolServerError(
                    f"MCP server {self.config.shown} {self.broken}", server=self.config.name
                ) from None
            error = {"code": exc.error.code, "message": exc.error.message}
            return RecordedCall(method, params, error=error)
        return RecordedCall(method, params, result=result)

    async def _send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        client = self.client
        if method == "tools/list":
            reply = await client.list_tools(cursor=params.get("cursor"))
        else:
            reply = await client.call_tool(params["name"], params.get("arguments") or {})
        return reply.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def close(self) -> None:
        """Stop the server: the SDK's transport closes its stdin, then stops its process
        tree (SIGTERM, SIGKILL), each step bounded; cancelled only past that."""
        self._closing.set()
        if not self._ready.is_set():
            self._starting.cancel()  # no session to close: stop waiting for the handshake
        if self._task is not None and not self._task.done():
            try:
                # Not within the timeout alone: cancelling the SDK's shutdown part way
                # (a server that hangs, with a timeout below the SDK's steps) left the
                # process unkilled, and the run waited for it to end on its own.
                bound = self.config.timeout + _sdk_shutdown()
                await asyncio.wait_for(asyncio.shield(self._task), bound)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await self._task
        if self._stderr is not None:
            self._stderr.close()


class MCPTools:
    """The tools of one ``tools:`` entry's MCP server for one run: listed at its start,
    each call replayed from the recording or made live (and recorded), per record mode."""

    def __init__(self, config: MCPServerConfig, recording: MCPRecording, mode: str) -> None:
        self.config = config
        self.recorded: ServerRecording = recording.server(config.name)
        self.file = recording
        self.mode = mode
        self.live: _Live | None = None
        self.listed: list[dict[str, Any]] = []

    async def start(self) -> None:
        """List the server's tools (ToolServerError if that fails)."""
        await self._list()

    async def _list(self) -> None:
        """List the server's tools (every page), checked against ``only:``."""
        listed = await self._pages()
        names = [t.get("name") for t in listed]
        missing = [n for n in self.config.only or [] if n not in names]
        if missing:
            have = ", ".join(printable(str(n)) for n in names[:50]) or "none"
            raise ToolServerError(
                f"MCP server {self.config.shown} has no tool {', '.join(missing)} (tools: "
                f"{self.config.name}: mcp: only:); it has {have}"
                + (f" and {len(names) - 50} more" if len(names) > 50 else ""),
                server=self.config.name,
            )
        only = self.config.only
        self.listed = [t for t in listed if only is None or t.get("name") in only]
        for tool in self.listed:
            name = tool.get("name")
            if not isinstance(name, str) or not name.isprintable():
                raise ToolServerError(
                    f"MCP server {self.config.shown} lists a tool named "
                    f"{printable(repr(name))[:80]}, with characters no model API takes in "
                    f"a name: leave it out with only: (tools: {self.config.name}: mcp: only:)",
                    server=self.config.name,
                )

    async def _pages(self) -> list[dict[str, Any]]:
        """Every page of the server's tools/list, at most MAX_PAGES of them."""
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await self._request("tools/list", {"cursor": cursor} if cursor else {})
            tools = page.get("tools")
            listed += [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
            cursor = page.get("nextCursor")
            if not cursor:
                return listed
            if not isinstance(cursor, str) or cursor in seen:
                raise ToolServerError(
                    f"MCP server {self.config.shown} answered tools/list with a nextCursor "
                    f"it gave before ({printable(repr(cursor)[:60])}): its pages never end",
                    server=self.config.name,
                )
            seen.add(cursor)
        raise ToolServerError(
            f"MCP server {self.config.shown} answered tools/list with more than {MAX_PAGES} "
            "pages (a new nextCursor each time): harness lists at most that many",
            server=self.config.name,
        )

    def tools(self) -> list[Tool]:
        """The listed tools as harness tools (their schema as the server gives it)."""
        return [
            Tool(
                _Caller(self, str(t["name"])),
                name=str(t["name"]),
                description=str(t.get("description") or ""),
                parameters=t.get("inputSchema") or {"type": "object", "properties": {}},
            )
            for t in self.listed
        ]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """One tools/call: its result's text, an error result if ``isError``."""
        answer = await self._request("tools/call", {"name": name, "arguments": arguments})
        await self._follow_changes()
        return ToolResult(result_text(answer), is_error=bool(answer.get("isError")))

    async def _follow_changes(self) -> None:
        """When the server said its tool list changed during the call (live, or where the
        recording holds its notification): list the tools again and offer the run the
        new list from its next request, with an ``mcp_list_changed`` event."""
        if self.live is not None and self.live.changed:
            self.live.changed = False
            self.recorded.add(RecordedCall(LIST_CHANGED, {}, result={}))
            self.file.dirty = True
        elif self.mode == _LIVE or not self.recorded.play_next(LIST_CHANGED):
            return
        await self._list()
        from harness._run import current_run
        from harness.events import MCPListChangedEvent

        run = current_run()
        if run is None:
            return
        theirs = {t.name: t for t in self.tools()}
        kept = {
            name: tool
            for name, tool in run.tools.items()
            if not (isinstance(tool.fn, _Caller) and tool.fn.server is self)
        }
        run.tools_changed({**kept, **{n: t for n, t in theirs.items() if n not in kept}})
        run.emit(
            MCPListChangedEvent(
                iteration=run.iteration, server=self.config.name, tools=sorted(theirs)
            )
        )

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        call = self.recorded.play(method, params) if self.mode != _LIVE else None
        if call is None:
            if self.mode == _REPLAY:
                detail = ""
                if not self.recorded.calls:
                    how = (
                        "add them with --record-mode new_episodes"
                        if self.file.found
                        else ("record it with --record-mode once")
                    )
                    detail = f"The recording has no call of this server: {how}."
                raise ToolServerError(
                    self.recorded.miss(method, params, detail), server=self.config.name
                )
            call = await self._live_request(method, params)
        if call.error is not None:
            raise _JSONRPCError(call.error)
        return call.result or {}

    async def _live_request(self, method: str, params: dict[str, Any]) -> RecordedCall:
        if self.live is None:
            self.live = _Live(self.config)
            await self.live.start()
        call = await self.live.request(method, params)
        self.recorded.add(call)
        self.file.dirty = True
        return call

    async def close(self) -> None:
        """Stop the live server, if one was started."""
        if self.live is not None:
            await self.live.close()


class _JSONRPCError(Exception):
    """The server's JSON-RPC error for a call: the model sees ``MCPError: message``."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error_text(error))


_JSONRPCError.__name__ = _JSONRPCError.__qualname__ = "MCPError"


class _Caller:
    """The function behind one MCP tool: its arguments go to the server as given."""

    def __init__(self, server: MCPTools, name: str) -> None:
        self.server = server
        self.name = name

    async def __call__(self, **arguments: Any) -> ToolResult:
        return await self.server.call(self.name, arguments)


def _leaves(exc: BaseException) -> Any:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _unparsed(exc: Exception) -> str:
    """The text a server wrote that is not JSON-RPC (from the SDK's validation error)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            for error in errors():
                if isinstance(error.get("input"), str):
                    return f"{error['input'][:120]!r} on its stdout"
    return _first_line(exc)


class MCPServers:
    """A run's MCP servers (the ``tools:`` entries with ``mcp:``) and their recording.

    ``record_mode`` is the cassettes' (docs/recording.md): ``none`` replays only, ``once``
    records when the file does not exist yet, ``new_episodes`` replays what it can and
    records the rest, ``all`` and ``rewrite`` record every call anew; ``live`` (under
    --disable-recording) talks to the servers and writes nothing.
    """

    def __init__(
        self,
        configs: list[MCPServerConfig],
        recording: MCPRecording,
        record_mode: str,
        *,
        live: bool = False,
    ) -> None:
        self.recording = recording
        self.write = not live
        if live:
            mode = _LIVE
        elif record_mode == "none" or (record_mode == "once" and recording.found):
            mode = _REPLAY
        else:
            mode = _NEW_EPISODES
        self.servers = {c.name: MCPTools(c, recording, mode) for c in configs}

    async def start(self) -> ToolServerError | None:
        """List every server's tools; the failure that ends the run, if one failed."""
        try:
            for server in self.servers.values():
                await server.start()
        except ToolServerError as exc:
            return exc
        return None

    def tools(self, name: str) -> list[Tool]:
        """The tools of ``tools:`` entry ``name`` (listed by ``start``)."""
        return self.servers[name].tools()

    async def aclose(self) -> None:
        """Stop the live servers, all at once (each within its own bound), and write what
        was recorded."""
        await asyncio.gather(*(server.close() for server in self.servers.values()))
        if self.write:
            self.recording.save()
