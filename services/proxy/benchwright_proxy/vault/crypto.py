"""The vault's key: ``BW_VAULT_KEY``, or ``vault.key`` made once beside the vault.

The key never leaves the proxy service (``benchwright_shared.sealing``).
"""

from benchwright_shared.sealing import Sealer, SealError

KEY_FILE = "vault.key"
# The vault's name for a key that cannot open what the vault holds.
VaultKeyError = SealError


class VaultSealer(Sealer):
    key_file = KEY_FILE


__all__ = ["KEY_FILE", "Sealer", "VaultKeyError", "VaultSealer"]
