"""What a sandbox backend must do. Every backend passes the same conformance suite."""

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol


class BackendError(Exception):
    """A backend could not do what was asked."""


class SandboxBackend(Protocol):
    name: str
    # What a second of one sandbox costs on this backend, in micro-dollars.
    rate_micros_per_s: int

    async def create(self, sandbox_id: str) -> None:
        """Provision an empty sandbox."""

    async def put_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        """Write a file at ``path`` relative to the sandbox's working directory."""

    async def get_file(self, sandbox_id: str, path: str) -> bytes:
        """Read a file relative to the sandbox's working directory."""

    def exec_lines(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin_lines: Sequence[str],
        env: Mapping[str, str],
        timeout_s: float,
    ) -> AsyncIterator[str]:
        """Run ``argv`` in the sandbox, feeding lines on stdin, yielding stdout lines.

        Raises ``BackendError`` when the command exits non-zero or overruns
        ``timeout_s`` (the whole process tree is killed first).
        """

    async def kill(self, sandbox_id: str) -> None:
        """Stop everything in the sandbox and remove it."""
