"""Sealing webhook signing secrets at rest (``benchwright_shared.sealing``).

The key comes from ``BW_WEBHOOKS_KEY`` (every gateway process of a deployment
needs the same one) or, without it, from ``<data_dir>/gateway/webhooks.key``,
created once with 0600 permissions.
"""

from benchwright_shared.sealing import Sealer, SealError

KEY_FILE = "webhooks.key"


class WebhooksSealer(Sealer):
    key_file = KEY_FILE


__all__ = ["KEY_FILE", "SealError", "Sealer", "WebhooksSealer"]
