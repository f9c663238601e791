"""Shared pieces of the scenario file schema: closed models, tool names, ranges."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

__all__ = ["CLOSED", "TOOL_NAME", "Count", "Range"]

# Unknown keys are errors, and numbers are finite: an infinite latency or bound would
# reach results.json as Infinity (not JSON) or a clock that never stops.
CLOSED = ConfigDict(extra="forbid", allow_inf_nan=False)
# What the OpenAI API accepts as a function name (Chat Completions and Responses).
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class Range(BaseModel):
    """A number, exactly (``1.5``) or within bounds (``{min: 1, max: 2.5}``); never negative."""

    model_config = CLOSED
    min: float | None = Field(default=None, json_schema_extra={"minimum": 0})
    max: float | None = Field(default=None, json_schema_extra={"minimum": 0})

    # Counts (iterations, calls) are whole numbers: ``iterations: 2.5`` could never match.
    _whole: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        form = "a whole number" if cls._whole else "a number"
        if isinstance(value, bool):
            raise ValueError(f"expected {form} or bounds like {{min: 1, max: 5}}")
        if isinstance(value, float) and cls._whole:
            if not value.is_integer():
                raise ValueError(f"{value} is not a whole number; a count is 0, 1, 2, ...")
            value = int(value)
        if isinstance(value, int | float):
            return {"min": value, "max": value}
        if not isinstance(value, dict):
            raise ValueError(f"expected {form} or bounds like {{min: 1, max: 5}}")
        return value

    @model_validator(mode="after")
    def _bounds(self) -> Range:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        for bound in (self.min, self.max):
            if bound is None:
                continue
            if bound < 0:
                raise ValueError(
                    f"{self._num(bound)} is negative; what is counted or timed is >= 0"
                )
            if self._whole and not float(bound).is_integer():
                raise ValueError(f"{bound} is not a whole number; a count is 0, 1, 2, ...")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(
                f"min ({self._num(self.min)}) is greater than max ({self._num(self.max)})"
            )
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        # Editors must accept the plain number form too.
        bounds = handler(core_schema)
        number = {"type": "integer" if cls._whole else "number", "minimum": 0}
        return {"anyOf": [number, bounds]}

    def contains(self, value: float, tolerance: float = 0.0) -> bool:
        """Whether ``value`` is within the bounds."""
        if self.min is not None and value < self.min - tolerance:
            return False
        return not (self.max is not None and value > self.max + tolerance)

    @staticmethod
    def _num(x: float) -> Any:
        return int(x) if float(x).is_integer() else x

    def shown(self) -> Any:
        """How the expectation is displayed: the number, or {min, max}."""
        if self.min is not None and self.min == self.max:
            return self._num(self.min)
        return {k: self._num(v) for k, v in (("min", self.min), ("max", self.max)) if v is not None}


class Count(Range):
    """A count, exactly (``3``) or within bounds (``{min: 2, max: 5}``)."""

    # A count's bounds are whole numbers.
    min: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    max: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    _whole: ClassVar[bool] = True


# The agent: section is AgentConfig's fields, written where they are defined (harness._config)
# and only there; the file spells the stagnation window as `stagnation: {window: W}`.
