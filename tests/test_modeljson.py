"""Ctrl-C landing while harness serializes a result stays a Ctrl-C (harness._modeljson).

pydantic-core wraps what a Python serializer raises in PydanticSerializationError; a
SIGINT whose handler runs inside one (harness's results have wrap serializers) was an
INTERNALERROR and exit 3 under xdist instead of an interrupted run (seen in CI)."""

from __future__ import annotations

import signal
from typing import Any

import pytest
from pydantic import BaseModel, field_serializer
from pydantic_core import PydanticSerializationError

from harness._modeljson import dump, dump_json
from harness._results import ScenarioResult
from harness._spool import ResultSpool


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raising KeyboardInterrupt here, whatever the test run was started with."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


class Interrupted(ScenarioResult):
    """A result whose serialization receives a real SIGINT part way."""

    @field_serializer("name")
    def _ctrl_c(self, name: str) -> str:
        signal.raise_signal(signal.SIGINT)  # its handler runs in this Python code
        return name


class Broken(BaseModel):
    x: int = 1

    @field_serializer("x")
    def _fails(self, x: int) -> int:
        raise ValueError("KeyboardInterrupt is only this message's text")


def _result(cls: type[ScenarioResult]) -> ScenarioResult:
    return cls(id="a.yaml::a", name="a", file="a.yaml", status="passed", termination="completed")


def test_ctrl_c_while_a_result_is_spooled_is_a_keyboard_interrupt(ctrl_c_raises):
    spool = ResultSpool()
    with pytest.raises(KeyboardInterrupt):
        spool.add(_result(Interrupted))
    with pytest.raises(KeyboardInterrupt):
        dump_json(_result(Interrupted), indent=2)
    with pytest.raises(KeyboardInterrupt):
        dump(_result(Interrupted), mode="json")
    spool.add(_result(ScenarioResult))  # the spool still works
    assert list(spool) == ["a.yaml::a"]


def test_other_serialization_errors_are_left_as_they_are():
    with pytest.raises(PydanticSerializationError, match="only this message"):
        dump_json(Broken())
    with pytest.raises(PydanticSerializationError, match="only this message"):
        dump(Broken())
    assert dump_json(_result(ScenarioResult)) == _result(ScenarioResult).model_dump_json()


def test_without_the_helper_pydantic_hides_the_ctrl_c(ctrl_c_raises):
    # What the helper is for: pydantic's own call turns it into another error.
    result: Any = _result(Interrupted)
    with pytest.raises(PydanticSerializationError, match="KeyboardInterrupt"):
        result.model_dump_json()
