"""A scenario's ``history:``: the conversation a run starts from, inline (a list of OpenAI
messages) or in a JSON file (docs/scenarios.md). What is wrong with a file is said by
place and kind, never by the values it holds: a file named by mistake (a credentials
file) must not be shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harness._errors import HarnessError
from harness._files import read_bounded
from harness._messages import (
    Conversation,
    MessageItemError,
    message_from_openai,
    messages_from_openai,
)

if TYPE_CHECKING:
    from harness.scenario._schema import Scenario

__all__ = ["HistoryItemError", "load_history", "starting_conversation"]


class HistoryItemError(HarnessError):
    """One message of an inline ``history:`` list that is not an OpenAI message."""

    def __init__(self, index: int, problem: str) -> None:
        super().__init__(f"history item {index + 1}: {problem}")
        self.index = index
        self.problem = problem


def starting_conversation(scenario: Scenario) -> Conversation | None:
    """The conversation ``history:`` gives (None without one); HarnessError when unusable."""
    if isinstance(scenario.history, str):
        return load_history(scenario.resolve(scenario.history))
    if isinstance(scenario.history, list):
        try:
            return Conversation(messages=messages_from_openai(scenario.history))
        except MessageItemError as exc:
            raise HistoryItemError(exc.index, exc.problem) from None
    return None


def load_history(path: Path) -> Conversation:
    """A saved conversation: Conversation.save() JSON, or a JSON list of OpenAI messages.

    What is wrong is said by place and kind, never by the values the file holds: a file
    named by mistake (a credentials file) must not be shown."""
    try:
        data = json.loads(read_bounded(path).decode("utf-8"))
    except OSError as exc:
        raise HarnessError(f"cannot read history file {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise HarnessError(f"history file {path} is not JSON: {exc.msg} ({where})") from None
    except ValueError:  # UnicodeDecodeError
        raise HarnessError(f"history file {path} is not JSON: it is not UTF-8 text") from None
    expected = f"history file {path} is neither a saved Conversation nor a list of OpenAI messages"
    if isinstance(data, list):
        try:
            return Conversation.from_openai(data)
        except MessageItemError as exc:
            raise HarnessError(f"{expected}: item {exc.index}: {_kinds(data[exc.index])}") from None
    try:
        return Conversation.model_validate(data)
    except ValidationError as exc:
        raise HarnessError(f"{expected}: {_places(exc)}") from None


# pydantic's error types whose words quote no value of the input.
_UNQUOTING = frozenset(
    {"missing", "extra_forbidden", "literal_error", "too_short", "too_long"}
    | {"string_too_short", "string_too_long", "union_tag_not_found"}
)


def _kind(err: Any) -> str:
    kind = str(err["type"])
    if kind == "union_tag_invalid":
        ctx = err.get("ctx") or {}
        return f"its {ctx.get('discriminator', 'tag')} is none of {ctx.get('expected_tags', '?')}"
    if kind in _UNQUOTING or kind.endswith("_type"):
        return " ".join(str(err["msg"]).split())
    return kind.replace("_", " ")


def _kinds(item: Any) -> str:
    """What is wrong with one item of a history list, by place and kind only."""
    if not isinstance(item, dict):
        return f"a JSON {type(item).__name__}, not a message"
    try:
        message_from_openai(item)
    except ValidationError as exc:
        return _places(exc)
    except (ValueError, TypeError, AttributeError):
        pass
    return "not an OpenAI message"


def _places(exc: ValidationError) -> str:
    """pydantic's errors by place and kind, without the values they quote: its own words
    where they quote none, else the kind of error."""
    errors = exc.errors(include_url=False, include_input=False)
    said = "; ".join(
        f"{'.'.join(map(str, err['loc'])) or '(top level)'}: {_kind(err)}" for err in errors[:3]
    )
    return said + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")
