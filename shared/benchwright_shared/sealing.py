"""Values sealed at rest with Fernet (AES-128-CBC + HMAC-SHA256, from ``cryptography``).

A service's key comes from its configuration or is made once into its data
directory with 0600 permissions; a subclass names the file (``key_file``). The
key never leaves the object, and a wrong key says so without showing either.
"""

import base64
import hashlib
import hmac
import os
from pathlib import Path
from typing import ClassVar

from cryptography.fernet import Fernet, InvalidToken


class SealError(Exception):
    """The key cannot open a sealed value (the key changed or was lost)."""


class Sealer:
    key_file: ClassVar[str] = "sealing.key"

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)
        self._derivation_key = hashlib.sha256(b"benchwright derive\x1f" + key).digest()

    @classmethod
    def from_config(cls, configured: str | None, directory: Path) -> "Sealer":
        if configured:
            return cls(configured.encode())
        path = directory / cls.key_file
        if not path.exists():
            directory.mkdir(parents=True, exist_ok=True)
            staging = directory / f".{cls.key_file}.{os.getpid()}.tmp"
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

    def derive(self, purpose: str, message: str) -> str:
        """A secret value for ``message``, the same from every copy sharing the key.

        One-way (HMAC-SHA256 under a key derived from the sealing key): knowing
        derived values tells nothing of the key or of other derived values.
        """
        mac = hmac.new(self._derivation_key, f"{purpose}\x1f{message}".encode(), "sha256")
        return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")

    def seal(self, value: str) -> str:
        return self._fernet.encrypt(value.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise SealError(f"the key in {self.key_file} does not open this value") from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<key hidden>)"
