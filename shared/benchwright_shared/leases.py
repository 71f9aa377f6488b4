"""One holder at a time: leases in a JetStream key-value bucket.

A lease is a key whose value is the copy id holding it. Taking a free lease is
``create`` (it fails when the key exists); taking over from a dead holder is
``update`` with the revision just read (compare-and-set: it fails when anyone
changed the key since). A lease lives as long as its holder's heartbeat does
(``liveness.Membership``): nothing is renewed per lease, so a copy driving a
thousand runs writes one key a second, not a thousand.

Two copies can both believe a dead holder's lease is free; only one ``update``
with the read revision succeeds. A holder that was only cut off (not dead) and
comes back finds its lease taken: whatever it writes to the run after that
conflicts in the event store (optimistic concurrency on the aggregate), and it
stops. See docs/decisions/0025.
"""

import asyncio
import contextlib
import logging
import time

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import (
    BucketNotFoundError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
)
from nats.js.kv import KeyValue

from benchwright_shared.liveness import Membership

log = logging.getLogger(__name__)

LEASES_BUCKET = "bw-leases"


async def leases_bucket(js: JetStreamContext, *, replicas: int = 1) -> KeyValue:
    try:
        return await js.key_value(LEASES_BUCKET)
    except BucketNotFoundError:
        pass
    config = KeyValueConfig(
        bucket=LEASES_BUCKET, history=1, storage=StorageType.FILE, replicas=replicas
    )
    try:
        return await js.create_key_value(config)
    except Exception:  # another copy created it meanwhile
        return await js.key_value(LEASES_BUCKET)


class Leases:
    """Leases on keys of one kind (``run.<id>``), held by copies of one service."""

    def __init__(self, membership: Membership, kind: str) -> None:
        self.membership = membership
        self.kind = kind
        self._kv: KeyValue | None = None

    @property
    def me(self) -> str:
        return self.membership.copy_id

    def _key(self, name: str) -> str:
        return f"{self.kind}.{name}"

    async def start(self, js: JetStreamContext, *, patience_s: float = 60.0) -> None:
        deadline = time.monotonic() + patience_s
        while True:
            try:
                self._kv = await leases_bucket(js, replicas=self.membership.replicas)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    async def holder(self, name: str) -> tuple[str | None, int]:
        """Who holds ``name`` (None when nobody does), and the revision that says so."""
        assert self._kv is not None, "leases not started"
        try:
            entry = await self._kv.get(self._key(name))
        except KeyNotFoundError as gone:  # never taken, or released (a delete marker)
            marker = getattr(gone, "entry", None)
            return None, int(marker.revision) if marker and marker.revision else 0
        value = (entry.value or b"").decode() or None
        return value, int(entry.revision or 0)

    async def holder_alive(self, name: str) -> bool:
        holder, _ = await self.holder(name)
        return holder is not None and await self.membership.alive(self.membership.service, holder)

    async def acquire(self, name: str) -> bool:
        """Take ``name`` if it is free, ours already, or its holder is dead."""
        assert self._kv is not None, "leases not started"
        key = self._key(name)
        holder, revision = await self.holder(name)
        if holder == self.me:
            return True
        if holder is not None and await self.membership.alive(self.membership.service, holder):
            return False
        try:
            if holder is None and revision == 0:
                await self._kv.create(key, self.me.encode())
            else:
                await self._kv.update(key, self.me.encode(), last=revision)
        except KeyWrongLastSequenceError:
            return False  # someone else got there first
        if holder is not None:
            log.warning("took %s over from %s, which is gone", key, holder)
        return True

    async def release(self, name: str) -> None:
        """Let ``name`` go, if we hold it."""
        assert self._kv is not None, "leases not started"
        holder, revision = await self.holder(name)
        if holder != self.me:
            return
        with contextlib.suppress(Exception):
            await self._kv.delete(self._key(name), last=revision)

    async def held(self) -> dict[str, str]:
        """Every lease of this kind and its holder."""
        assert self._kv is not None, "leases not started"
        found: dict[str, str] = {}
        try:
            keys = await self._kv.keys(filters=[f"{self.kind}.*"])
        except Exception:  # no keys yet
            return found
        for key in keys:
            with contextlib.suppress(KeyNotFoundError):
                entry = await self._kv.get(key)
                if entry.value:
                    found[key.split(".", 1)[1]] = entry.value.decode()
        return found
