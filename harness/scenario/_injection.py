"""The ``inject:`` key of a tool stub: prompt-injection text appended to its results."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

__all__ = ["Inject", "InjectSpec"]


class InjectSpec(BaseModel):
    """Adversarial text appended to a tool's result (``inject:``), on every call or one."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    text: str = Field(min_length=1, description="appended to the result the model sees")
    on_call: int | None = Field(
        default=None, ge=1, description="the call it is appended to (1-based); omitted: every call"
    )
    into: Literal["result", "description"] = Field(
        default="result",
        description="result: appended to the call's result; description: to the tool's "
        "description, which the model reads in every request (an MCP server's poisoned tool)",
    )

    @model_validator(mode="after")
    def _description_has_no_call(self) -> InjectSpec:
        if self.into == "description" and self.on_call is not None:
            raise ValueError(
                "on_call is for results: a description is read before any call; remove on_call"
            )
        return self


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
