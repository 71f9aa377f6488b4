"""Sandbox backends, looked up by name. Adding one is adding a module here."""

from collections.abc import Callable
from pathlib import Path

from benchwright_sandbox_manager.ports import SandboxBackend
from benchwright_shared.settings import Settings

BackendFactory = Callable[[Path, Settings], SandboxBackend]


def _local(root: Path, settings: Settings) -> SandboxBackend:
    from benchwright_sandbox_manager.backends.local import LocalBackend

    return LocalBackend(root, settings)


def _e2b(root: Path, settings: Settings) -> SandboxBackend:
    from benchwright_sandbox_manager.backends.e2b import E2BBackend

    return E2BBackend(root, settings)


def _sandbox0(root: Path, settings: Settings) -> SandboxBackend:
    from benchwright_sandbox_manager.backends.sandbox0 import Sandbox0Backend

    return Sandbox0Backend(root, settings)


BACKENDS: dict[str, BackendFactory] = {"local": _local, "e2b": _e2b, "sandbox0": _sandbox0}


class UnknownBackendError(KeyError):
    pass


def get_backend(name: str, root: Path, settings: Settings | None = None) -> SandboxBackend:
    """The backend registered as ``name``, keeping its sandboxes under ``root``."""
    try:
        factory = BACKENDS[name]
    except KeyError:
        known = sorted(BACKENDS)
        raise UnknownBackendError(f"unknown sandbox backend {name!r}; known: {known}") from None
    return factory(root, settings or Settings())
