"""Over NATS: every sandbox says how it is isolated, and none starts unisolated unasked."""

from pathlib import Path

import pytest

from benchwright_shared.contracts import SandboxCommandFailed, SandboxCreated
from benchwright_shared.settings import Settings
from tests.sandbox_manager.conftest import SandboxService

pytestmark = pytest.mark.connected


async def test_a_sandbox_records_its_isolation(sandboxes: SandboxService) -> None:
    created = await sandboxes.create({"x.txt": "x"})
    assert isinstance(created, SandboxCreated)
    assert created.metadata["isolation"] == "bubblewrap"
    assert created.metadata["benchwright_role"] == "work"


async def test_without_bubblewrap_untrusted_code_is_refused(nats_url: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", nats_url=nats_url, sandbox_bwrap="no-bwrap")
    service = await SandboxService(settings).start()
    try:
        refused = await service.create({"task_impl.py": "print('never runs')"})
        assert isinstance(refused, SandboxCommandFailed)
        assert refused.error_type == "isolation_unavailable"
        assert "not installed" in refused.detail and "BW_SANDBOX_UNISOLATED" in refused.detail
        local = service.service.manager.root / "local"
        assert list(local.iterdir()) == []  # nothing was set up
    finally:
        await service.close()


async def test_an_opted_in_unisolated_sandbox_says_so(nats_url: str, tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        nats_url=nats_url,
        sandbox_bwrap="no-bwrap",
        sandbox_unisolated=True,
    )
    service = await SandboxService(settings).start()
    try:
        created = await service.create()
        assert isinstance(created, SandboxCreated)
        assert created.metadata["isolation"] == "none"
        result = await service.exec(created.sandbox_id, ["python", "-c", "print('ran')"])
        assert (result.exit_code, result.stdout) == (0, "ran\n")
    finally:
        await service.close()
