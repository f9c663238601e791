"""The ``inject:`` key of a tool stub: prompt-injection text appended to its results."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

__all__ = ["Inject", "InjectSpec"]


class InjectSpec(BaseModel):
    """Adversarial text appended to a tool's result (``inject:``), on every call or one."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    text: str = Field(min_length=1, description="appended to the result the model sees")
    on_call: int | None = Field(
        default=None, ge=1, description="the call it is appended to (1-based); omitted: every call"
    )


def _inject_form(value: Any) -> Any:
    # TEXT, {text, on_call} or a list of them: always a list of mappings.
    items = value if isinstance(value, list) else [value]
    return [{"text": item} if isinstance(item, str) else item for item in items]


_INJECT_ITEM = {
    "anyOf": [{"type": "string", "minLength": 1}, InjectSpec.model_json_schema(mode="validation")]
}


# TEXT, {text, on_call}, or a list of them; always read as a list of InjectSpec.
Inject = Annotated[
    list[InjectSpec],
    BeforeValidator(_inject_form),
    WithJsonSchema({"anyOf": [*_INJECT_ITEM["anyOf"], {"type": "array", "items": _INJECT_ITEM}]}),
]
