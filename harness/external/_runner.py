"""Running an external target: serve the model on 127.0.0.1, call the target, observe,
and end the run with the termination docs/external.md#how-a-target-run-ends gives.

The served application is given (the scripted server of ``harness.serve`` or a
cassette app); this module wraps it in the observing middleware, starts it on a free
port, calls the target with every SDK's base-URL and key variables set
(``harness.external._environment``), and turns how
the target ended into the run's termination and final response.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness._actions import FinalData, FinalResponse, RunError, RunResult, Termination
from harness._config import AgentConfig
from harness._errors import HarnessError, exception_chain
from harness._vendors import ANTHROPIC, OPENAI
from harness.external._environment import DUMMY_API_KEY, served_variables, target_environment
from harness.external._middleware import ObservingApp
from harness.external._observe import Observation
from harness.external._targets import TargetCall
from harness.llm._config import ConversationRule
from harness.serve import running_app

__all__ = [
    "DEFAULT_TIMEOUT",
    "DUMMY_API_KEY",
    "WIRE_VARIABLE",
    "TargetSpec",
    "run_target",
    "where_raised",
]

log = logging.getLogger("harness")

DEFAULT_TIMEOUT = 60.0
# Names the wire a ``matrix: {wire: [...]}`` combination serves, for an agent that speaks
# several (docs/wires.md#matrix-wire).
WIRE_VARIABLE = "HARNESS_WIRE"


@dataclass(frozen=True)
class TargetSpec:
    """Which target to run and how (a scenario's ``target:`` section, as the engine sees it)."""

    kind: str
    value: Any
    timeout: float = DEFAULT_TIMEOUT
    on_stagnation: str = "observe"
    # The one wire served (a ``matrix: {wire: [...]}`` combination's); None: every wire.
    wire: str | None = None
    # expect.max_requests_per_call: a target sending more for one reply is stopped.
    max_requests_per_call: int | None = None


@dataclass
class _Outcome:
    answer: str | None = None
    exc: BaseException | None = None
    timed_out: bool = False
    halted: str | None = None  # why harness stopped it (a retry storm)


async def _call(kind: Any, spec: TargetSpec, call: TargetCall, served: ObservingApp) -> _Outcome:
    try:
        answer = await asyncio.wait_for(_halting(kind.run(spec.value, call), served), spec.timeout)
    except TimeoutError:
        return _Outcome(timed_out=True)
    except _Halted:
        return _Outcome(halted=served.halted)
    except Exception as exc:
        log.debug("the target raised", exc_info=True)
        return _Outcome(exc=exc)
    return _Outcome(answer=answer)


class _Halted(Exception):
    """The observation stopped the run (a retry storm past expect.max_requests_per_call)."""


async def _halting(running: Any, served: ObservingApp) -> Any:
    """``running``, cancelled as soon as the observing app halts the run."""
    if served.request_cap is None:
        return await running
    task = asyncio.ensure_future(running)
    while not task.done():
        await asyncio.wait({task}, timeout=0.02)
        if served.halted is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise _Halted
    return task.result()


async def run_target(
    spec: TargetSpec,
    app: Any,
    *,
    input: str | None,
    plugins: Any,
    config: AgentConfig | None = None,
    root: Path | None = None,
    tools: Any = None,
    conversations: list[ConversationRule] | None = None,
) -> RunResult:
    """Run ``spec``'s target against ``app`` (an ASGI app answering the model's API);
    ``tools``, a ``harness.mcp.ToolServer``, is served to it over MCP (docs/mcp.md);
    ``conversations`` name the target's conversations in the result."""
    kind = plugins.target_factory(spec.kind)()
    observation = Observation(
        plugins,
        config or AgentConfig(),
        on_stagnation=spec.on_stagnation,
        conversations=conversations,
    )
    observing = ObservingApp(
        app, observation, only=spec.wire, request_cap=spec.max_requests_per_call
    )
    with (
        _serving(kind, observing) as url,
        _mcp(tools, observation) as mcp,
    ):
        observation.served = url
        served = served_variables(url)
        if mcp is not None:
            served["HARNESS_MCP_URL"] = mcp
        if spec.wire is not None:
            served[WIRE_VARIABLE] = spec.wire
        call = TargetCall(
            input=input,
            base_url=url,
            root=root or Path.cwd(),
            timeout=spec.timeout,
            env=target_environment(served),
            mcp_url=mcp,
        )
        observation.begin()
        outcome = await _call(kind, spec, call, observing)
    termination, final = _ending(outcome, observation, spec, plugins)
    # Where a crash was raised; not for a framework's own limit, which is an ending like
    # any other: a line number there would make the baseline change with every edit above.
    crash = outcome.exc if termination == Termination.error else None
    where = where_raised(crash, call.root) if crash is not None else None
    if where is not None and final.error is not None and final.error.exception:
        final = final.model_copy(update={"error": final.error.merged(where=where)})
    return observation.finish(termination, final)


@contextlib.contextmanager
def _serving(kind: Any, app: Any) -> Iterator[str]:
    """The URL ``app`` is served at for a run of ``kind``: the process's one target
    address for a kind whose code is imported here (module-level clients point at it),
    when no other run holds it; else a port of the run's own."""
    if getattr(kind, "in_process", False):
        from harness.external._address import ADDRESS

        with ADDRESS.serving(app) as url:
            if url is not None:
                yield url
                return
    with running_app(app) as url:
        yield url


@contextlib.contextmanager
def _mcp(tools: Any, observation: Observation) -> Any:
    """The URL of ``tools`` served over MCP and observed (None without tools)."""
    if tools is None:
        yield None
        return
    from harness.mcp._hosting import serving_http

    tools.observer = observation
    with serving_http(tools) as url:
        yield url


# harness's own frames are no frame of the project's, even in harness's own repository.
_HARNESS = Path(__file__).resolve().parents[1]


def where_raised(exc: BaseException, root: Path) -> str | None:
    """``path:line in function`` of the innermost frame of the project's own code that
    ``exc`` (or what caused it) passed through: a file under ``root``, outside installed
    packages and harness; None when it never ran the project's code (a command target)."""
    import traceback

    root = root.resolve()
    for link in exception_chain(exc):
        found = None
        for frame in traceback.extract_tb(link.__traceback__):
            shown = _own_file(Path(frame.filename), root)
            if shown is not None:
                found = f"{shown}:{frame.lineno} in {frame.name}"
        if found is not None:
            return found
    return None


def _own_file(path: Path, root: Path) -> str | None:
    try:
        path = path.resolve()
        relative = path.relative_to(root)
    except (OSError, ValueError):
        return None
    if path.is_relative_to(_HARNESS):
        return None
    # A virtual environment inside the project (.venv, .tox) holds other people's code.
    if any(
        part in ("site-packages", "dist-packages") or part.startswith(".")
        for part in relative.parts
    ):
        return None
    return relative.as_posix()


# A connection error when no request reached harness: the client went somewhere else.
_NOT_REACHED = (
    " (no request reached harness's model server: the client talks to another server: it "
    "was given a base URL of its own, or built before harness set "
    f"{OPENAI.base_url_variable} ({ANTHROPIC.base_url_variable}, ...), its module imported "
    "before harness loaded the scenario; "
    "build it inside the function, or take a base_url parameter: see "
    "docs/external.md#clients-built-when-the-module-is-imported)"
)
_CONNECTION_ERRORS = {"APIConnectionError", "ConnectError", "ConnectionError"}


def _connection_failed(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) is an HTTP client's connection error."""
    return any(
        cls.__name__ in _CONNECTION_ERRORS
        for link in exception_chain(exc)
        for cls in type(link).__mro__
    )


def _ending(
    outcome: _Outcome, observation: Observation, spec: TargetSpec, plugins: Any
) -> tuple[Termination, FinalResponse]:
    """The termination and final response of a target run (docs/external.md)."""
    run = observation.run
    stagnation = observation.stagnation
    if stagnation is not None and spec.on_stagnation == "stop":
        data = FinalData(stagnation=True, signature=stagnation.signature, window=stagnation.window)
        return Termination.stagnation, FinalResponse(content=outcome.answer, data=data)
    if outcome.halted is not None:
        run.remember("error", outcome.halted)
        error = RunError(type="retry_storm", exception=None, message=outcome.halted, status=None)
        return Termination.error, FinalResponse(error=error)
    if outcome.timed_out:
        message = (
            f"the target did not finish within its timeout ({spec.timeout:g} s) and was "
            "stopped; raise target.timeout if it needs longer"
        )
        run.remember("error", message)
        error = RunError(type="timeout", exception=None, message=message, status=None)
        return Termination.error, FinalResponse(error=error)
    observed = FinalData(stagnation_observed=stagnation) if stagnation is not None else FinalData()
    if observation.mcp_abort is not None:
        # A served stub failed as a scenario bug (a template): not the target's failure.
        run.remember("error", observation.mcp_abort)
        error = RunError(type="error", exception=None, message=observation.mcp_abort, status=None)
        return Termination.error, FinalResponse(data=observed, error=error)
    if outcome.exc is None:
        return Termination.completed, FinalResponse(content=outcome.answer, data=observed)
    return _failure(outcome.exc, observation, plugins, observed)


def _sole(exc: BaseException) -> BaseException:
    """The one exception inside task groups (an MCP client's, anyio's): "unhandled errors
    in a TaskGroup (1 sub-exception)" says nothing of what failed."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _failure(
    exc: BaseException, observation: Observation, plugins: Any, data: FinalData
) -> tuple[Termination, FinalResponse]:
    exc = _sole(exc)
    run = observation.run
    message = observation.shown(str(exc) or type(exc).__name__)
    classified = plugins.hook.harness_classify_exception(exc=exc)
    if classified is not None:
        try:
            termination = Termination(classified)
        except ValueError:
            names = ", ".join(t.value for t in Termination)
            raise HarnessError(
                f"harness_classify_exception answered {classified!r} for "
                f"{type(exc).__name__}; answer one of {names} or None"
            ) from None
        run.remember("final" if termination == Termination.max_iterations else "error", message)
        error = RunError(
            type=termination.value, exception=type(exc).__name__, message=message, status=None
        )
        return termination, FinalResponse(data=data, error=error)
    if observation.last_error is not None:
        last = observation.last_error  # its message as the run keeps it already
        run.remember("error", f"LLM error: {last.message}")
        return Termination.llm_error, FinalResponse(data=data, error=last)
    if observation.run.llm_calls == 0 and _connection_failed(exc):
        message += _NOT_REACHED
    fields: dict[str, Any] = {"type": "error", "exception": type(exc).__name__, "message": message}
    details = getattr(exc, "details", None)
    if isinstance(details, dict):
        shown = observation.shown
        fields.update({k: shown(v) if isinstance(v, str) else v for k, v in details.items()})
    run.remember("error", f"{type(exc).__name__}: {message}")
    error = RunError.model_validate({**fields, "status": None})
    return Termination.error, FinalResponse(data=data, error=error)
