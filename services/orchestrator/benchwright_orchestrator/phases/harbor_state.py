"""Carrying an attempt's final state to a fresh sandbox for a "separate" verifier.

Harbor's ``[verifier] environment_mode = "separate"`` runs the tests in an
environment of their own instead of the agent's. Here that is a fresh task sandbox
laid out from the same plan, holding what the agent left in the task's writable
places (its working tree and ``/logs``): whatever the agent started is gone with its
sandbox, and nothing it did outside those places can reach the verifier. The
places travel as one tarball through the artifacts bucket (a sandbox with
directories of its own is never snapshotted), packed in the sandbox's own working
directory, which is none of them.
"""

from benchwright_orchestrator.phases.harbor_attempts import (
    SOLUTION_DIR,
    TESTS_DIR,
    VERIFIER_LOGS,
    sandbox_dirs,
)
from benchwright_orchestrator.ports import PhaseError, Workspace
from benchwright_shared.agentic import EnvironmentPlan
from benchwright_shared.contracts import SandboxFile

__all__ = ["STATE_ARCHIVE", "carry_final_state", "restore_final_state"]

# Relative: in the sandbox's working directory, outside every place it carries.
STATE_ARCHIVE = ".bw-final-state.tgz"
CARRY_TIMEOUT_S = 120.0


def carried_places(plan: EnvironmentPlan) -> list[str]:
    """What the agent could change: the sandbox's places but the tests and the solution."""
    return [d for d in sandbox_dirs(plan) if d not in (TESTS_DIR, SOLUTION_DIR)]


async def carry_final_state(work: Workspace, sandbox_id: str, plan: EnvironmentPlan) -> SandboxFile:
    """Pack the agent's places into the artifacts bucket; the file that brings them back."""
    places = [p.lstrip("/") for p in carried_places(plan)]
    packed = await work.exec_in(
        sandbox_id,
        [
            "tar",
            f"--exclude=./{VERIFIER_LOGS.lstrip('/')}",
            "-czf",
            STATE_ARCHIVE,
            "-C",
            "/",
            *[f"./{p}" for p in places],
        ],
        cwd=".",
        timeout_s=CARRY_TIMEOUT_S,
        export=[STATE_ARCHIVE],
    )
    if packed.exit_code != 0 or not packed.exported:
        detail = (packed.stderr or packed.stdout)[-500:]
        raise PhaseError("verifier:state_not_carried", f"tar exited {packed.exit_code}: {detail}")
    archive = packed.exported[0]
    return SandboxFile(path=STATE_ARCHIVE, bucket=archive.bucket, object_name=archive.object_name)


async def restore_final_state(work: Workspace, sandbox_id: str) -> None:
    """Unpack the carried places over the fresh sandbox's initial ones."""
    unpacked = await work.exec_in(
        sandbox_id,
        ["sh", "-c", f"tar -xzf {STATE_ARCHIVE} -C / && rm -f {STATE_ARCHIVE}"],
        cwd=".",
        timeout_s=CARRY_TIMEOUT_S,
    )
    if unpacked.exit_code != 0:
        detail = (unpacked.stderr or unpacked.stdout)[-500:]
        raise PhaseError(
            "verifier:state_not_restored", f"tar exited {unpacked.exit_code}: {detail}"
        )
