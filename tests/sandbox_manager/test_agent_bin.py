"""The operator's agent CLIs (``Settings.agent_bin_dir``): every local sandbox sees the
directory read-only at ``AGENT_BIN_MOUNT``, where Harbor's bridge looks for an installed
agent's CLI; without the setting nothing is there."""

from pathlib import Path

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.backends.local import LocalBackend
from benchwright_shared.settings import AGENT_BIN_MOUNT, Settings

FIND = f'PATH="{AGENT_BIN_MOUNT}:$PATH"; command -v claude && claude'


def _local(tmp_path: Path, settings: Settings) -> LocalBackend:
    backend = get_backend("local", tmp_path, settings)
    assert isinstance(backend, LocalBackend)
    return backend


async def test_the_agent_directory_is_on_hand_read_only(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "claude").write_text("#!/bin/sh\necho the operators claude\n")
    (agents / "claude").chmod(0o755)
    backend = _local(tmp_path / "sandboxes", Settings(agent_bin_dir=agents))
    await backend.create("s1", dirs=["/app"])
    found = await backend.exec("s1", ["sh", "-c", FIND], stdin=None, env={}, timeout_s=30)
    assert found.exit_code == 0, found.stderr
    assert found.stdout.splitlines() == [f"{AGENT_BIN_MOUNT}/claude", "the operators claude"]
    wrote = await backend.exec(
        "s1", ["sh", "-c", f"echo x > {AGENT_BIN_MOUNT}/claude"], stdin=None, env={}, timeout_s=30
    )
    assert wrote.exit_code != 0
    assert (agents / "claude").read_text().endswith("claude\n")
    await backend.kill("s1")
    await backend.close()


async def test_without_the_setting_there_is_no_agent_directory(tmp_path: Path) -> None:
    backend = _local(tmp_path, Settings())
    await backend.create("s1", dirs=["/app"])
    found = await backend.exec("s1", ["sh", "-c", FIND], stdin=None, env={}, timeout_s=30)
    assert found.exit_code != 0 and found.stdout == ""
    await backend.kill("s1")
    await backend.close()
