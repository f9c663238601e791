"""Text made safe for the HTML report: escaped, clipped with a visible marker, compared
word by word, and numbers written for people.

Untrusted text (model output, tool results, scenario names) reaches the page only
through these helpers or Jinja's autoescaping: every segment is escaped before it is
wrapped in the report's own markup.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from markupsafe import Markup, escape
from pydantic_core import to_jsonable_python

__all__ = [
    "WORD_DIFF_BUDGET",
    "clip",
    "compact",
    "seconds",
    "signed",
    "stderr_apart",
    "to_text",
    "transcript_text",
    "value_text",
    "word_diff",
]


def _more(rest: int) -> str:
    """The visible marker for ``rest`` characters cut off (our own markup and a number)."""
    plural = "" if rest == 1 else "s"
    return f'<span class="clip">… {rest:,} more character{plural} not shown</span>'


def clip(value: Any, limit: int) -> Markup:
    """Escaped text, cut at ``limit`` characters with a visible marker saying how much is left."""
    text = value if isinstance(value, str) else to_text(value)
    if len(text) <= limit:
        return escape(text)
    # escape() makes the head safe; the marker is ours. (An f-string here is several times
    # faster than Markup.format, and this runs for every text.)
    return Markup(f"{escape(text[:limit])}{_more(len(text) - limit)}")


# A word or a run of punctuation, with the white space after it (and white space at the
# start): together the tokens are the whole text, and a sentence is few of them.
_TOKENS = re.compile(r"\s+|(?:\w+|[^\w\s]+)\s*")
# Past this many token pairs left after the common head and tail, the part between them
# is marked as a whole: difflib's cost grows with the product.
WORD_DIFF_BUDGET = 20_000


def _changed_span(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many tokens ``a`` and ``b`` share at the start, and then at the end."""
    head = 0
    most = min(len(a), len(b))
    while head < most and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < most - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def word_diff(old: Any, new: Any, limit: int) -> tuple[Markup | None, Markup | None]:
    """Two answers with the words only one of them has marked: ``<del>`` in the old one,
    ``<ins>`` in the new one; (None, None) unless both are text.

    Words are compared without the white space after them; each side shows its own text.
    Only the shown heads (``limit`` characters each) are compared, and past
    WORD_DIFF_BUDGET the changed middle is marked whole, which bounds the cost. Every
    segment is escaped before it is wrapped in our own markup, so the markup can never
    split an entity or mix with the answers' text.
    """
    if not isinstance(old, str) or not isinstance(new, str):
        return None, None
    a, b = _TOKENS.findall(old[:limit]), _TOKENS.findall(new[:limit])
    keys_a, keys_b = [t.rstrip() for t in a], [t.rstrip() for t in b]
    head, tail = _changed_span(keys_a, keys_b)
    end_a, end_b = len(a) - tail, len(b) - tail
    if (end_a - head) * (end_b - head) > WORD_DIFF_BUDGET:
        ops = [("replace", head, end_a, head, end_b)]
    else:
        matcher = difflib.SequenceMatcher(
            a=keys_a[head:end_a], b=keys_b[head:end_b], autojunk=False
        )
        ops = [
            (tag, i1 + head, i2 + head, j1 + head, j2 + head)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    ops = [("equal", 0, head, 0, head), *ops, ("equal", end_a, len(a), end_b, len(b))]
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            left.append(str(escape("".join(a[i1:i2]))))
            right.append(str(escape("".join(b[j1:j2]))))
            continue
        if i2 > i1:
            left.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            right.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    if len(old) > limit:
        left.append(_more(len(old) - limit))
    if len(new) > limit:
        right.append(_more(len(new) - limit))
    return Markup("".join(left)), Markup("".join(right))


def _jsonable(value: Any) -> Any:
    """``value`` as JSON data: a model (``final.error``, ``final.data``) as its JSON, the
    keys results.json holds, never its Python repr."""
    return to_jsonable_python(value, fallback=str)


def to_text(value: Any) -> str:
    """A value as readable text: strings as they are, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), indent=2, ensure_ascii=False, default=str)


def value_text(value: Any) -> str:
    """An expected or actual value: one line of JSON when short, indented when long."""
    if isinstance(value, str):
        return value
    line = json.dumps(_jsonable(value), ensure_ascii=False, default=str)
    return line if len(line) <= 80 else to_text(value)


def compact(value: Any) -> str:
    """A value as one line of JSON (strings as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), ensure_ascii=False, default=str)


def stderr_apart(error: Any) -> tuple[Any, str | None]:
    """``final.error`` as JSON data without its ``stderr``, and the stderr: a command
    target's output is lines to read as they were, not one escaped JSON string."""
    data = _jsonable(error)
    if not isinstance(data, dict) or not isinstance(data.get("stderr"), str):
        return data, None
    rest = {k: v for k, v in data.items() if k != "stderr"}
    return rest, data["stderr"]


def seconds(value: float | None) -> str:
    """Simulated seconds for people: ``0.85 s``, ``12.3 s``, ``0 s``."""
    if not value:
        return "0 s"
    if value >= 100:
        return f"{value:,.0f} s"
    if value >= 10:
        return f"{value:.1f} s"
    return f"{value:.2f} s"


def transcript_text(messages: list[Any], limit: int) -> Markup:
    """A transcript as one escaped plain-text log: what large reports show instead of one
    element per message, since parsing text costs a browser far less than elements."""
    parts: list[str] = []
    for message in messages:
        role = message.role
        head = role
        if role == "tool":
            head = f"tool {message.name} · {message.tool_call_id}" + (
                " · error" if message.is_error else ""
            )
        elif role == "assistant" and message.finish_reason:
            head = f"assistant · {message.finish_reason}"
        parts.append(f"── {escape(head)} ──\n")
        if message.content:
            parts.append(clip(message.content, limit) + "\n")
        if role == "assistant":
            for call in message.tool_calls:
                arguments = clip(call.arguments_json(), limit)
                parts.append(f"→ {escape(call.name)} {arguments}  ({escape(call.id)})\n")
    return Markup("".join(parts))


def signed(value: float | None) -> str:
    """A delta with its sign."""
    if value is None:
        return ""
    number = int(value) if float(value).is_integer() else value
    return f"+{number}" if number > 0 else f"{number}"
