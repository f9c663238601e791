"""The built-in target kinds (``python``, ``command``) and the built-in recognition of the
frameworks' own limit exceptions. Both are an ordinary plugin (``DEFAULT_PLUGINS``).

A target kind is registered as ``register(name, factory)``; ``factory()`` returns an
object with ``check(value, root)`` (called when the scenario file loads: raise
``TargetError`` for a target that cannot run) and ``async run(value, call)`` (called once
per run with a ``TargetCall``: return the final answer, or None for no answer; raise to
end the run; it is cancelled at the timeout and must then stop what it started), and
optionally ``in_process = True`` (its code is imported into harness's process: its runs
are served at the process's one target address, ``harness.external._address``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib
import inspect
import os
import queue
import shutil
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness._errors import HarnessError, describe, exception_chain
from harness.hookspecs import hookimpl

__all__ = [
    "LIMIT_EXCEPTIONS",
    "CommandTarget",
    "PythonTarget",
    "TargetCall",
    "TargetError",
    "TargetExit",
    "TargetStopped",
]

# The frameworks' "too many turns" exceptions, by class name (no framework is imported):
# pydantic-ai, the OpenAI Agents SDK, LangGraph.
LIMIT_EXCEPTIONS = frozenset({"UsageLimitExceeded", "MaxTurnsExceeded", "GraphRecursionError"})

_Env = TypeVar("_Env", bound=MutableMapping[str, str])

# Kept from a failing command's stderr for final.error.
_STDERR_TAIL = 2000


class TargetError(HarnessError):
    """A target that cannot run (said when the scenario file loads)."""


class TargetExit(Exception):
    """A command target exited with a non-zero status."""

    def __init__(self, status: int, stderr: str) -> None:
        super().__init__(f"the command exited with status {status}")
        self.status = status
        self.stderr = stderr

    @property
    def details(self) -> dict[str, Any]:
        """What final.error keeps beside the message."""
        return {"exit_status": self.status, "stderr": self.stderr}


class TargetStopped(BaseException):
    """Raised inside a sync Python target's thread when its time ran out."""


@dataclass
class TargetCall:
    """One call of a target: its input, where the model is served, and the environment."""

    input: str | None
    base_url: str
    root: Path
    timeout: float
    # Changes to the environment: None removes a variable (the user's own OPENAI_*).
    env: dict[str, str | None] = field(default_factory=dict)
    # Where harness serves the scenario's tools over MCP (docs/mcp.md), when it has any.
    mcp_url: str | None = None

    def child_environment(self) -> dict[str, str]:
        """The whole environment of a program the target starts: harness's, changed."""
        return _changed(dict(os.environ), self.env)


def _changed(environ: _Env, changes: Mapping[str, str | None]) -> _Env:
    for name, value in changes.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return environ


@contextlib.contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    _changed(os.environ, values)
    try:
        yield
    finally:
        _changed(os.environ, saved)


# -- python: module:callable --------------------------------------------------------------


def _load(value: str, root: Path) -> Any:
    module_name, _, attr = value.partition(":")
    if not module_name or not attr:
        raise TargetError(f"{value!r}: write 'module:callable' (e.g. myagents.weather:answer)")
    if "/" in module_name or "\\" in module_name or module_name.endswith(".py"):
        dotted = module_name.removesuffix(".py").replace("\\", "/").strip("/").replace("/", ".")
        raise TargetError(
            f"{value!r}: name the module with dots, as Python imports it, not as a file: "
            f"write {dotted}:{attr}"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise TargetError(_import_problem(module_name, exc)) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TargetError(
            f"{value!r} is {describe(obj)}, not a callable: point python: at a function "
            "called with the input"
        )
    return obj


def _import_problem(module_name: str, exc: Exception) -> str:
    """Why the target's module does not import, and what to do."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and not (module_name + ".").startswith(missing + "."):
        # The module is found; something it imports is not installed.
        return (
            f"cannot import {module_name!r}: it imports {missing!r}, which is not installed: "
            f"install it, or add it to the target's requires: [{missing}] to skip the "
            "scenario where it is missing"
        )
    problem = f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
    return f"{problem} (modules import from the project root)"


def _check_signature(value: str, fn: Any) -> None:
    """``fn`` takes the input as its one positional argument (and ``base_url=`` when it
    names that parameter), as run() calls it: a wrong signature is a load error, not a
    TypeError in every run."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # no signature to read (some builtins): the call will tell
    kwargs = {k: "" for k in _OPTIONAL if k in signature.parameters}
    try:
        signature.bind("input", **kwargs)
    except TypeError as exc:
        call = "fn(input" + "".join(f", {k}=URL" for k in kwargs) + ")"
        raise TargetError(
            f"{value!r} cannot be called as {call}: its signature is {signature} ({exc}); "
            "take the input as its one required parameter"
        ) from None


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


# The keyword parameters a python target may take: the model's and the tools' URLs.
_OPTIONAL = ("base_url", "mcp_url")


def _wanted(fn: Any) -> set[str]:
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set()
    return {name for name in _OPTIONAL if name in parameters}


class _TargetThread:
    """A thread that runs sync targets one after another, kept for the process's life.

    An application calls its agent from one thread for its whole life, and frameworks
    rely on it: the Agents SDK's ``Runner.run_sync`` runs on the calling thread's event
    loop, kept between calls, and its default client keeps one connection pool for the
    process; a connection made on one thread's loop fails on another's ("bound to a
    different event loop"). So each run takes an idle thread of the earlier runs (a new
    one when all are busy, under ``--harness-concurrency``). A target interrupted at its
    timeout is left to end in its own thread, which is never used again.
    """

    _lock = threading.Lock()
    _idle: list[_TargetThread] = []

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._busy = False
        self._retired = False
        self._thread = threading.Thread(target=self._work, name="harness-target", daemon=True)
        self._thread.start()

    @classmethod
    def take(cls) -> _TargetThread:
        """An idle thread of an earlier run, else a new one, marked busy."""
        with cls._lock:
            while cls._idle:
                worker = cls._idle.pop()
                if worker._thread.is_alive():
                    worker._busy = True
                    return worker
        worker = cls()
        worker._busy = True
        return worker

    def submit(self, job: Any) -> None:
        """Run ``job()`` in this thread (taken with ``take``), then call what it returns
        once the thread is idle again: the next run, started when the caller hears of the
        end, finds this thread idle."""
        self._jobs.put(job)

    def interrupt(self) -> None:
        """Raise TargetStopped in the job still running, and retire the thread."""
        with self._lock:
            if self._busy and not self._retired:
                self._retired = True
                thread = self._thread
                if thread.ident is not None and thread.is_alive():
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(thread.ident), ctypes.py_object(TargetStopped)
                    )

    def _work(self) -> None:
        # TargetStopped may come at any instruction after the job's end too, until the
        # thread is back among the idle ones: it ends the thread, which is retired then.
        with contextlib.suppress(TargetStopped):
            while True:
                settle = self._jobs.get()()
                with self._lock:
                    if self._retired:
                        return
                    self._busy = False
                    _TargetThread._idle.append(self)
                settle()

    @classmethod
    def forget(cls) -> None:
        """In a forked child: the parent's threads are not this process's."""
        cls._lock = threading.Lock()
        cls._idle = []


os.register_at_fork(after_in_child=_TargetThread.forget)


async def _in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a target thread (``_TargetThread``), interrupted when
    cancelled.

    Not the loop's default executor: asyncio.run waits for that one's threads, and a
    target that never returns would hold the run forever.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> Any:
        try:
            result, error = fn(*args, **kwargs), None
        except TargetStopped:
            raise
        except BaseException as exc:
            result, error = None, exc

        def tell() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                loop.call_soon_threadsafe(settle, result, error)

        return tell

    worker = _TargetThread.take()
    worker.submit(work)
    try:
        return await future
    except asyncio.CancelledError:
        worker.interrupt()
        raise


class _TargetLoop:
    """One event loop for the async targets of the whole process, in a thread of its own.

    Harness gives each scenario an event loop of its own, but an agent's framework may
    keep async clients bound to the loop they were made on (langchain-openai caches one
    httpx client per base URL and timeout): on the next scenario's loop they fail with
    "Event loop is closed". An application keeps one loop for its whole life, and its
    targets get one too.
    """

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._thread is None or not cls._thread.is_alive():
                cls._loop = asyncio.new_event_loop()
                cls._thread = threading.Thread(
                    target=cls._loop.run_forever, name="harness-target-loop", daemon=True
                )
                cls._thread.start()
            return cls._loop

    @classmethod
    def retire(cls, loop: asyncio.AbstractEventLoop) -> None:
        """Leave ``loop`` to the target still running on it: later targets get a new one."""
        with cls._lock:
            if cls._loop is loop:
                cls._loop = cls._thread = None
        with contextlib.suppress(RuntimeError):  # closed already
            loop.call_soon_threadsafe(loop.stop)


# How long a cancelled target may take to finish before its loop is left to it.
_CANCEL_GRACE = 2.0


async def _awaited(awaitable: Any, finished: threading.Event) -> Any:
    try:
        return await awaitable
    finally:
        finished.set()


async def _on_target_loop(awaitable: Any) -> Any:
    """Await ``awaitable`` on the targets' loop; cancelling this cancels it there.

    A target that does not end when cancelled (it swallows the cancellation, or blocks
    the loop in a call that never yields) keeps its loop: the next target gets a fresh
    one, so it neither waits behind it nor shares a loop with what it still does.
    """
    loop = _TargetLoop.get()
    finished = threading.Event()
    future = asyncio.run_coroutine_threadsafe(_awaited(awaitable, finished), loop)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        if not await asyncio.to_thread(finished.wait, _CANCEL_GRACE):
            _TargetLoop.retire(loop)
        raise


def _imported(value: str, root: Path) -> Any:
    """The callable, its module imported in the served environment at the process's one
    target address (harness.external._address): a client built at import reaches harness
    in every run."""
    from harness.external._address import ADDRESS
    from harness.external._environment import served_variables, target_environment

    with _environment(target_environment(served_variables(ADDRESS.url()))):
        return _load(value, root)


class PythonTarget:
    """``python: module:callable``: called with the input (and ``base_url``, ``mcp_url`` if
    it takes them)."""

    # Its module is imported into harness's process: its runs are served at the process's
    # one target address, the one its module was imported with.
    in_process = True

    def check(self, value: Any, root: Path) -> None:
        """Import the module (in the served environment), find the callable and check it
        takes the input."""
        if not isinstance(value, str):
            raise TargetError(f"expected 'module:callable', got {describe(value)}")
        _check_signature(value, _imported(value, root))

    async def run(self, value: str, call: TargetCall) -> str | None:
        """Call it with the model served at ``call.base_url``; its return value is the answer
        (None: no answer)."""
        fn = _imported(value, call.root)  # imported here if its file was not loaded first
        given = {"base_url": call.base_url, "mcp_url": call.mcp_url}
        kwargs = {name: given[name] for name in _wanted(fn)}
        with _environment(call.env):
            if _is_async(fn):
                result = await _on_target_loop(fn(call.input, **kwargs))
            else:
                result = await _in_thread(fn, call.input, **kwargs)
                if inspect.isawaitable(result):
                    result = await _on_target_loop(result)
        # None is the absence of an answer, not the text "None".
        return result if result is None or isinstance(result, str) else str(result)


# -- command: [argv] --------------------------------------------------------------------------


def _program(argv: list[str], root: Path) -> str | None:
    """Why the program cannot run (None when it can)."""
    program = argv[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program) if Path(program).is_absolute() else root / program
        if not path.is_file():
            return f"command {program!r} not found (no file {path})"
        if not os.access(path, os.X_OK):
            return f"command {program!r} is not executable (chmod +x {program})"
        return None
    if shutil.which(program) is None:
        return f"command {program!r} not found on PATH"
    return None


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


class CommandTarget:
    """``command: [argv]``: run in the project root; the input on stdin or as ``{input}``;
    stdout (stripped) is the answer."""

    def check(self, value: Any, root: Path) -> None:
        """The program exists (on PATH, or as a path from the project root)."""
        if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
            raise TargetError(f"expected a non-empty list of strings (argv), got {describe(value)}")
        problem = _program(value, root)
        if problem is not None:
            raise TargetError(problem)

    async def run(self, value: list[str], call: TargetCall) -> str:
        """Run it; a non-zero exit raises TargetExit; cancelled, its process group is killed."""
        text = call.input or ""
        placed = any("{input}" in arg for arg in value)
        argv = [arg.replace("{input}", text) for arg in value]
        if call.mcp_url is not None:
            argv = [arg.replace("{mcp_url}", call.mcp_url) for arg in argv]
        if argv[0].startswith(("./", "../")):
            argv[0] = str(call.root / argv[0])
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL if placed else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=call.root,
            env=call.child_environment(),
            # Its own process group: a timeout kills the program and whatever it started.
            start_new_session=True,
        )
        try:
            out, err = await process.communicate(None if placed else text.encode())
        except asyncio.CancelledError:
            _kill(process)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 5)
            raise
        if process.returncode != 0:
            tail = err.decode("utf-8", "replace")[-_STDERR_TAIL:].strip()
            raise TargetExit(process.returncode or 0, tail)
        return out.decode("utf-8", "replace").strip()


# -- the plugin ---------------------------------------------------------------------------------


@hookimpl
def harness_register_targets(register: Any) -> None:
    """``python: module:callable`` and ``command: [argv]``."""
    register("python", PythonTarget)
    register("command", CommandTarget)


@hookimpl(trylast=True)
def harness_classify_exception(exc: BaseException) -> str | None:
    """``max_iterations`` for pydantic-ai's, the Agents SDK's and LangGraph's limit
    exceptions (by class name, also as the cause of another), else no opinion."""
    for link in exception_chain(exc):
        if any(cls.__name__ in LIMIT_EXCEPTIONS for cls in type(link).__mro__):
            return "max_iterations"
    return None
