"""Sealing signing secrets at rest: Fernet, with a key from configuration or made once.

The key comes from ``BW_WEBHOOKS_KEY`` (urlsafe base64, 32 bytes; every gateway
process of a deployment needs the same one) or, without it, from
``<data_dir>/gateway/webhooks.key``, created once with 0600 permissions.
"""

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

KEY_FILE = "webhooks.key"


class SealError(Exception):
    """The key cannot open a sealed secret (the key changed or was lost)."""


class Sealer:
    """Seals and opens signing secrets; the key never leaves this object."""

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_config(cls, configured: str | None, directory: Path) -> "Sealer":
        if configured:
            return cls(configured.encode())
        path = directory / KEY_FILE
        if not path.exists():
            directory.mkdir(parents=True, exist_ok=True)
            staging = directory / f".{KEY_FILE}.{os.getpid()}.tmp"
            fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(Fernet.generate_key())
            # Two processes starting at once: the first key linked into place wins for both.
            try:
                os.link(staging, path)
            except FileExistsError:
                pass
            finally:
                staging.unlink(missing_ok=True)
        return cls(path.read_bytes().strip())

    def seal(self, value: str) -> str:
        return self._fernet.encrypt(value.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise SealError("the webhooks key does not open this signing secret") from None

    def __repr__(self) -> str:
        return "Sealer(<key hidden>)"
