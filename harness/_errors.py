"""Exceptions harness raises on purpose, each meant to be read by a person."""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness._secrets import scrub_text

__all__ = [
    "AbortRun",
    "HarnessError",
    "LLMError",
    "NotWritten",
    "ScenarioError",
    "ScenarioSkipped",
    "ToolServerError",
    "describe",
    "describe_errors",
    "exception_chain",
    "format_errors",
    "printable",
    "validation_message",
    "where_defined",
]


class HarnessError(Exception):
    """Base class: bad input or configuration, with a message that says what to fix."""


class LLMError(Exception):
    """The LLM call failed (HTTP error, timeout, script exhausted, cassette miss).

    The loop turns it into termination ``llm_error`` with
    ``final.error = {type, message, status}``.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str = "llm_error",
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        # The wait the error answer asked for (its retry-after), in seconds, if it gave one.
        self.retry_after = retry_after

    def as_error(self) -> dict[str, Any]:
        """The ``final.error`` form."""
        return {"type": self.type, "message": self.message, "status": self.status}


class NotWritten(HarnessError):
    """A file harness writes could not be written (a full disk, no permission): one line
    naming the file and why, and exit status 3, since the run's outcome is not on disk."""


class ScenarioSkipped(HarnessError):
    """A scenario that cannot run here (its target needs what is not installed)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class AbortRun(Exception):
    """Raised by a tool or hook to end the run in ``error`` instead of reporting a tool failure.

    Scenario stubs raise it when a template fails while rendering: that is a scenario
    bug, not something the model should see.
    """


class ToolServerError(AbortRun):
    """A tool's server failed as a transport: an MCP server that crashed, answered what is
    not MCP or hung past its timeout, or a replayed call its recording does not hold. The
    run ends in ``tool_error`` (the tools' ``llm_error``) with this one-line message."""

    def __init__(self, message: str, *, tool: str | None = None, server: str | None = None):
        super().__init__(message)
        self.message = message
        self.tool = tool
        self.server = server


def _one_line(text: str) -> str:
    """One problem, one line: messages from YAML or Jinja (or a key written "\\n") may
    span several."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


class RecordingRefused(HarnessError):
    """A recording that must stop, with nothing written: the API refused the key (401,
    403), or there is no key for the public endpoint. Bad input, not a run's failure."""


class ScenarioError(HarnessError):
    """A scenario file that cannot be used: every problem as ``path:line: field: message``."""

    def __init__(self, issues: list[tuple[str, int | None, str, str]]):
        # (path, line, field, message) per problem, in file order; each field and message
        # one line, so that the structured issue and the printed line say the same.
        self.issues = sorted(
            (
                (path, line, _one_line(field), _one_line(message))
                for path, line, field, message in issues
            ),
            key=lambda i: (i[0], i[1] or 0),
        )
        super().__init__("\n".join(self.format_issue(*issue) for issue in self.issues))

    @staticmethod
    def format_issue(path: str, line: int | None, field: str, message: str) -> str:
        """``path:line: field: message`` (line and field left out when unknown)."""
        where = f"{path}:{line}" if line else path
        message = _one_line(message)
        return f"{where}: {field}: {message}" if field else f"{where}: {message}"

    @classmethod
    def single(cls, path: str, line: int | None, field: str, message: str) -> ScenarioError:
        """An error with one problem."""
        return cls([(path, line, field, message)])


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: each character a terminal would act on (an
    escape code, a carriage return, a line break) written as its escape (``\\x1b``).
    For names and lines that come from outside (an MCP server's tool names, its stderr)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def where_defined(obj: Any) -> str:
    """``module.qualname`` of a function or class (of its class for other objects), for
    messages: never a repr, which may hold a memory address."""
    if not isinstance(getattr(obj, "__qualname__", None), str):
        obj = type(obj)
    # `<locals>` says only that it was defined inside a function: left out.
    return f"{getattr(obj, '__module__', '?')}.{obj.__qualname__}".replace(".<locals>", "")


def describe(value: Any) -> str:
    """A value for an error message: its type and a short repr, never a memory address."""
    if value is None:
        return "None"
    if isinstance(value, functools.partial):
        inner = value.func
        return f"functools.partial of {where_defined(inner)}"
    cls = type(value)
    # Masked before it is shortened: a shortened key is a prefix no masking finds.
    text = scrub_text(repr(value))
    if " at 0x" in text:  # a default repr: the address says nothing to a reader
        if isinstance(getattr(value, "__qualname__", None), str):
            return f"{cls.__name__} {where_defined(value)}"
        return f"a {where_defined(cls)} object"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{cls.__name__} {text}"


# pydantic's wording of a type error, and harness's.
_MESSAGES = (
    (
        re.compile(r"^Input should be a valid dictionary( or instance of \w+)?$"),
        "expected a mapping",
    ),
    (re.compile(r"^Input should be a valid list$"), "expected a list"),
    (re.compile(r"^Field required$"), "required"),
    (re.compile(r"^(Value|Assertion) error, "), ""),
    (re.compile(r"^Input should be "), "expected "),
)
# A bound, by pydantic's error type: how it is said, and its key in the error's ctx.
_BOUNDS = {
    "greater_than_equal": ("{} or more", "ge"),
    "greater_than": ("more than {}", "gt"),
    "less_than_equal": ("{} or less", "le"),
    "less_than": ("less than {}", "lt"),
}


def _plural(count: object, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def validation_message(err: Mapping[str, Any], *, show_input: bool = False) -> str:
    """One pydantic validation error in harness's words, without its location.

    ``expected a mapping``, ``expected 1 or more, got 0``: the one place pydantic's
    messages are reworded for people (scenario files, a matrix, ``Agent(...)``). A bound
    always says the value given; ``show_input`` adds it to the others too (for callers
    with no line to point at).
    """
    kind, ctx, value = err.get("type"), err.get("ctx") or {}, err.get("input")
    if kind in _BOUNDS and _BOUNDS[kind][1] in ctx:
        said, key = _BOUNDS[kind]
        bound = ctx[key]
        # A float field's bound comes as 0.0: said as written, 0.
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"expected {said.format(bound)}, got {value!r}"
    if kind in ("too_short", "too_long") and "actual_length" in ctx:
        least = kind == "too_short"
        limit = ctx.get("min_length" if least else "max_length")
        return (
            f"expected {'at least' if least else 'at most'} {_plural(limit, 'item')}, got "
            f"{ctx['actual_length'] or 'none'}"
        )
    if kind in ("string_too_short", "string_too_long"):
        least = kind == "string_too_short"
        limit = ctx.get("min_length" if least else "max_length")
        return (
            f"expected {'at least' if least else 'at most'} {_plural(limit, 'character')}, "
            f"got {value!r}"
        )
    message = str(err.get("msg"))
    for pattern, replacement in _MESSAGES:
        message = pattern.sub(replacement, message)
    return f"{message}, got {value!r}" if show_input else message


def describe_errors(errors: Sequence[Mapping[str, Any]], *, show_input: bool = False) -> str:
    """Validation errors as one line for people: ``loc: message; ...`` in harness's words."""
    parts = []
    for err in errors:
        loc = ".".join(str(part) for part in err.get("loc", ()))
        message = validation_message(err, show_input=show_input)
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts)


def format_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Validation errors as one line of text, without pydantic's documentation URLs.

    pydantic's own words: a model reads them in the result of a call with invalid
    arguments, and rewording them would change the requests recorded cassettes match.
    People's errors use describe_errors.
    """
    parts = []
    for err in errors:
        loc = ".".join(str(part) for part in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
    return "; ".join(parts)


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what caused it (``__cause__``, else ``__context__``), and so on; each
    once, at most 20 (a chain may loop)."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen and len(seen) < 20:
        seen.add(id(at))
        yield at
        at = at.__cause__ or at.__context__


def raised_at(exc: BaseException) -> str | None:
    """``path:line in function`` of the innermost frame of ``exc`` in the user's own code.

    Frames of harness, the standard library and installed packages are skipped: what is
    left is the plugin, planner or tool that raised. The path is relative to the
    ``sys.path`` entry it was imported from (``plugins/planner.py``), so it is the same
    wherever the run started. None when every frame is someone else's.
    """
    import sys
    import sysconfig
    import traceback
    from pathlib import Path

    skip = [Path(__file__).resolve().parent]
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            skip.append(Path(sysconfig.get_paths()[key]).resolve())
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        path = Path(frame.filename).resolve()
        if not path.is_file() or any(path.is_relative_to(s) for s in skip):
            continue
        roots = [Path(p).resolve() for p in sys.path if p and Path(p).is_dir()]
        bases = [r for r in roots if path.is_relative_to(r)]
        shown = path.relative_to(max(bases, key=lambda r: len(r.parts))) if bases else path
        return f"{shown.as_posix()}:{frame.lineno} in {frame.name}"
    return None
