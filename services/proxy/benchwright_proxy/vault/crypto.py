"""The vault's key: from configuration, or made once and kept beside the vault.

Values are sealed with Fernet (AES-128-CBC with HMAC-SHA256, from
``cryptography``). The key file is created with 0600 permissions and never
leaves the proxy service.
"""

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

KEY_FILE = "vault.key"


class VaultKeyError(Exception):
    """The key cannot open what the vault holds (a changed or lost key)."""


class Sealer:
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
            # Two processes starting at once: the first key written wins for both.
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
            raise VaultKeyError("the vault key does not open this secret") from None
