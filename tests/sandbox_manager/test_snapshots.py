"""Snapshots over a real NATS: capture, restore into new sandboxes, survive a restart."""

import asyncio

import pytest

from benchwright_shared.contracts import (
    KillSandbox,
    SandboxCommandFailed,
    SandboxCreated,
    SnapshotSandbox,
)
from tests.sandbox_manager.conftest import SandboxService, new_id

pytestmark = pytest.mark.connected

FILES = {"task_impl.py": "X = 1\n", "data/rows.jsonl": '{"a": 1}\n', "data/deep/n.txt": "ñ"}


async def test_a_snapshot_restores_the_same_files_with_the_same_id(
    sandboxes: SandboxService,
) -> None:
    original = await sandboxes.new_sandbox(FILES)
    # Files made inside the sandbox count too, exec bits and empty dirs included.
    made = await sandboxes.exec(
        original,
        ["sh", "-c", "echo built > out.txt && chmod +x out.txt && mkdir -p empty/dir"],
    )
    assert made.exit_code == 0, made.stderr
    tree = await sandboxes.tree(original)
    assert tree["out.txt"] == ["built\n", True] and tree["data/deep/n.txt"] == ["ñ", False]

    snap = await sandboxes.snapshot(original, label="after setup")
    assert snap.snapshot_id.startswith("snap_") and len(snap.snapshot_id) == 17
    assert snap.sandbox_id == original and snap.run_id == "run_test" and snap.size_bytes > 0

    restored = await sandboxes.new_sandbox(from_snapshot=snap.snapshot_id)
    assert restored != original
    assert await sandboxes.tree(restored) == tree
    listing = await sandboxes.exec(restored, ["find", "empty", "-type", "d"])
    assert listing.stdout.split() == ["empty", "empty/dir"]
    # Same files, same snapshot: the id is the content's.
    again = await sandboxes.snapshot(restored)
    assert (again.snapshot_id, again.size_bytes) == (snap.snapshot_id, snap.size_bytes)
    # Running Python there leaves no trace in the snapshot (no bytecode caches).
    await sandboxes.exec(restored, ["python", "-m", "bench_runner", "--help"])
    assert (await sandboxes.snapshot(restored)).snapshot_id == snap.snapshot_id

    # ``files`` go on top of the snapshot; a change is a new snapshot.
    on_top = await sandboxes.new_sandbox({"out.txt": "replaced", "new.txt": "n"}, snap.snapshot_id)
    layered = await sandboxes.tree(on_top)
    assert layered["out.txt"][0] == "replaced" and layered["new.txt"][0] == "n"
    assert layered["data/rows.jsonl"] == tree["data/rows.jsonl"]
    assert (await sandboxes.snapshot(on_top)).snapshot_id != snap.snapshot_id


async def test_a_snapshot_outlives_its_sandbox_and_the_service(sandboxes: SandboxService) -> None:
    sandbox_id = await sandboxes.new_sandbox(FILES)
    snap = await sandboxes.snapshot(sandbox_id, label="golden")
    tree = await sandboxes.tree(sandbox_id)
    await sandboxes.send(KillSandbox(command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id))

    await sandboxes.restart()  # a new service instance on the same data directory

    # Recorded in the service's own event store...
    service = sandboxes.service
    recorded = await service.store.run(service.app.get, sandbox_id)
    assert recorded is not None and list(recorded.snapshots.values()) == [snap.snapshot_id]
    # ...and restorable by a later run.
    restored = await sandboxes.create(from_snapshot=snap.snapshot_id)
    assert isinstance(restored, SandboxCreated)
    assert restored.metadata["from_snapshot"] == snap.snapshot_id
    assert await sandboxes.tree(restored.sandbox_id) == tree


@pytest.mark.parametrize("snapshot_id", ["snap_000000000000", "snap_../../etc", "nope"])
async def test_creating_from_a_missing_snapshot_fails(
    sandboxes: SandboxService, snapshot_id: str
) -> None:
    reply = await sandboxes.create(from_snapshot=snapshot_id)
    assert isinstance(reply, SandboxCommandFailed)
    assert reply.error_type == "snapshot_not_found" and snapshot_id in reply.detail


async def test_a_killed_sandbox_cannot_be_snapshotted(sandboxes: SandboxService) -> None:
    sandbox_id = await sandboxes.new_sandbox()
    await sandboxes.send(KillSandbox(command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id))
    reply = await sandboxes.send(
        SnapshotSandbox(command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id)
    )
    assert isinstance(reply, SandboxCommandFailed) and reply.error_type == "sandbox_killed"


async def test_a_corrupt_snapshot_fails_setup_and_leaves_no_sandbox(
    sandboxes: SandboxService,
) -> None:
    snapshots = sandboxes.settings.data_dir / "sandbox-manager" / "snapshots"
    (snapshots / "snap_0123456789ab.tar.gz").write_bytes(b"not a tarball")
    reply = await sandboxes.create(from_snapshot="snap_0123456789ab")
    assert isinstance(reply, SandboxCommandFailed)
    assert reply.error_type == "sandbox_setup_failed" and "snap_0123456789ab" in reply.detail
    await asyncio.sleep(1.5)  # past the relay's poll: no late SandboxCreated either
    assert not any(isinstance(r, SandboxCreated) for r in sandboxes.replies.values())
    sandboxes_dir = sandboxes.service.manager.root / "local"
    assert list(sandboxes_dir.iterdir()) == []
