"""A phase's failure is a refusal: its ``error_type`` is the refusal's code."""

from benchwright_orchestrator.driver.base import DriverError
from benchwright_orchestrator.ports import InfraError, PhaseError, SandboxLost
from benchwright_shared.refusal import Refused


def test_a_phase_error_is_a_refusal_whose_code_is_its_error_type() -> None:
    error = PhaseError("no_dataset", "no benchmark subset to fetch")
    assert isinstance(error, Refused)
    assert (error.error_type, error.detail) == ("no_dataset", "no benchmark subset to fetch")
    problem = error.problem()
    assert (problem.status, problem.title) == (500, "phase failed")
    assert (problem.detail, problem.extra) == (
        "no benchmark subset to fetch",
        {"code": "no_dataset"},
    )


def test_the_platform_failing_is_a_503_and_a_driver_failing_a_phase_error() -> None:
    lost = SandboxLost("sbx_1", "its sandbox-manager died")
    assert isinstance(lost, InfraError)
    assert (lost.status, lost.error_type, lost.sandbox_id) == (503, "infra:sandbox_lost", "sbx_1")
    gave_up = DriverError("driver_gave_up", "find did not close")
    assert isinstance(gave_up, PhaseError)
    assert (gave_up.status, gave_up.code) == (500, "driver_gave_up")
