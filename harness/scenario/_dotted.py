"""``expect:`` keys written dotted (``tool_calls.count``), read as the nested form.

The docs' expectations table and ``harness plugins`` name keys dotted, so people write
them that way: ``tool_calls.count: {search: 3}`` means ``tool_calls: {count: {search: 3}}``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DottedKeyError", "expand_dotted", "split_dotted"]


class DottedKeyError(ValueError):
    """A key given both dotted and nested; ``key`` is the dotted one."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def expand_dotted(expect: dict[str, Any], sections: frozenset[str]) -> dict[str, Any]:
    """``expect`` with every ``SECTION.KEY`` moved under ``SECTION`` (file order kept).

    Only keys whose first part names a section are moved: a plugin's own key may contain
    dots. A key given in both forms is a DottedKeyError.
    """
    if not any(split_dotted(key, sections) for key in expect):
        return expect
    out: dict[str, Any] = {}
    for key, value in expect.items():
        parts = split_dotted(key, sections)
        if parts is None:
            if key in out and isinstance(out[key], dict) and isinstance(value, dict):
                _merge(out[key], value, key)
            else:
                # A copy: dotted keys after it are merged in, the caller's data stays.
                out[key] = dict(value) if key in sections and isinstance(value, dict) else value
            continue
        section, sub = parts
        target = out.setdefault(section, {})
        if not isinstance(target, dict):
            raise DottedKeyError(key, f"{section!r} is given twice: as {key!r} and as {section!r}")
        _merge(target, {sub: value}, section)
    return out


def split_dotted(key: str, sections: frozenset[str]) -> tuple[str, str] | None:
    """``("tool_calls", "count")`` for ``"tool_calls.count"``; None for other keys."""
    section, dot, sub = key.partition(".")
    if dot and section in sections and sub and "." not in sub:
        return section, sub
    return None


def _merge(target: dict[str, Any], extra: dict[str, Any], section: str) -> None:
    for sub, value in extra.items():
        if sub in target:
            raise DottedKeyError(
                f"{section}.{sub}",
                f"'{section}.{sub}' is given twice (dotted and under {section!r}): keep one",
            )
        target[sub] = value
