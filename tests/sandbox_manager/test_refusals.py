"""What an executor raised, as the one refusal a sandbox command's caller is told."""

from benchwright_sandbox_manager.manager import CommandRefused, refusal
from benchwright_sandbox_manager.ports import BackendError, UnsafePathError
from benchwright_shared.refusal import Refused


def test_a_backend_failure_becomes_a_refusal_keeping_its_kind_and_words() -> None:
    unsafe = refusal(UnsafePathError("../etc/passwd leaves the sandbox"), "sandbox_exec_failed")
    assert isinstance(unsafe, Refused) and isinstance(unsafe, CommandRefused)
    assert (unsafe.status, unsafe.error_type) == (400, "unsafe_path")
    assert unsafe.detail == "../etc/passwd leaves the sandbox"
    other = refusal(BackendError("disk full"), "sandbox_exec_failed")
    assert (other.status, other.code, other.detail) == (422, "sandbox_exec_failed", "disk full")
    bug = refusal(KeyError("x"), "sandbox_setup_failed")
    assert (bug.error_type, bug.detail) == ("sandbox_setup_failed", "KeyError: 'x'")


def test_a_missing_sandbox_is_a_404() -> None:
    missing = CommandRefused("no_sandbox", "no sandbox 'sbx_1'")
    assert missing.problem().status == 404
    assert missing.problem().extra == {"code": "no_sandbox"}
