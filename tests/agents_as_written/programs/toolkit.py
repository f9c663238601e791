"""The tools every agent here uses, as plain functions that really do something.

`lookup_city` reads a small table and raises `LookupError` for a city it does not know (the
scenarios ask for Atlantis on purpose, so every agent meets one failing call); `save_note`
appends to a notes file. Each call is written to the tool log (`AAW_TOOL_LOG`, one JSON
object a line: tool, args, failed, error), which the test compares with what harness
observed. The frameworks wrap these functions their own way (a decorator, a schema, a
`FunctionTool`), and report the failure their own way.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

CITIES = {
    "Paris": {"country": "France", "population": 2102650},
    "Rome": {"country": "Italy", "population": 2746984},
    "Oslo": {"country": "Norway", "population": 717710},
}

LOOKUP_DOC = "Look up a city's country and population."
NOTE_DOC = "Save a short note to the user's notes file."

# JSON Schemas of the two tools, for the SDKs that take schemas.
LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city's name"}},
    "required": ["city"],
}
NOTE_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The note"}},
    "required": ["text"],
}


def log_path() -> Path:
    """Where the tool log goes: AAW_TOOL_LOG, else a file in the temporary folder."""
    default = Path(tempfile.gettempdir()) / "agents_as_written" / "tool-log.jsonl"
    path = Path(os.environ.get("AAW_TOOL_LOG") or default)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def log_call(tool: str, args: dict[str, Any], error: str | None = None) -> None:
    """Append one call to the tool log."""
    entry = {"tool": tool, "args": args, "failed": error is not None, "error": error}
    with log_path().open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")


def lookup_city(city: str) -> str:
    """Look up a city's country and population."""
    facts = CITIES.get(city)
    if facts is None:
        error = f"no city named {city!r} in the atlas"
        log_call("lookup_city", {"city": city}, error)
        raise LookupError(error)
    log_call("lookup_city", {"city": city})
    return f"{city}: {facts['country']}, population {facts['population']}"


def save_note(text: str) -> str:
    """Save a short note to the user's notes file."""
    notes = log_path().with_suffix(".notes")
    with notes.open("a", encoding="utf-8") as f:
        f.write(text + "\n")
    count = len(notes.read_text(encoding="utf-8").splitlines())
    log_call("save_note", {"text": text})
    return f"note {count} saved"


FUNCTIONS = {"lookup_city": lookup_city, "save_note": save_note}


def run(name: str, args: dict[str, Any]) -> tuple[str, bool]:
    """Run one call for an agent's own loop: (result text, failed)."""
    fn = FUNCTIONS.get(name)
    if fn is None:
        log_call(name, args, f"no tool named {name!r}")
        return f"no tool named {name!r}", True
    try:
        return fn(**args), False
    except LookupError as exc:
        return f"LookupError: {exc}", True


def model(default: str) -> str:
    """The model name an agent asks for (AAW_MODEL overrides it; unused by the scripts)."""
    return os.environ.get("AAW_MODEL", default)
