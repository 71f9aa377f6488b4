"""A launch's ``telemetry``: checked strictly, and sent on only when it changes something."""

from typing import Any

import pytest
from pydantic import ValidationError

from benchwright_gateway.requests import LaunchRequest


def launch(**body: Any) -> LaunchRequest:
    return LaunchRequest.model_validate({"benchmark": "GSM8K", **body})


def test_the_defaults_travel_as_none_and_a_choice_as_given() -> None:
    assert launch().telemetry_setting() is None
    assert launch(telemetry={}).telemetry_setting() is None
    chosen = launch(telemetry={"message_content": True})
    assert chosen.telemetry_setting() == {"traces": True, "message_content": True}


@pytest.mark.parametrize("telemetry", [{"traces": "no"}, {"spans": False}, {"traces": 0}])
def test_a_wrong_telemetry_is_refused(telemetry: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="telemetry"):
        launch(telemetry=telemetry)
