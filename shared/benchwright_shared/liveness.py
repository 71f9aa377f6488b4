"""Which copies of each service are alive: one heartbeat key per copy in a KV bucket.

Every copy of a service that holds something in its process (a sandbox-manager
holds sandboxes, an orchestrator drives runs) has a ``copy_id`` of its own, fresh
at each start, and writes ``<service>.<copy_id>`` into the ``bw-members``
JetStream key-value bucket every ``ttl / 4`` seconds. The bucket's ``max_age`` is
the TTL: a copy that stops writing (killed, hung, cut off from NATS) loses its key
within ``ttl`` seconds, and whoever waits on it learns it is gone.

Silence proves death only to a judge that could have heard: after its own
connection to NATS was down (a nats-server restart, say) every key may have
expired at once, so ``alive`` answers True (benefit of the doubt) until this
process has been reconnected for a whole TTL. See docs/decisions/0022.
"""

import asyncio
import contextlib
import logging
import os
import re
import secrets
import socket
import time

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, NoKeysError
from nats.js.kv import KeyValue

log = logging.getLogger(__name__)

MEMBERS_BUCKET = "bw-members"
DEFAULT_TTL_S = 5.0


def new_copy_id(service: str) -> str:
    """A fresh id for one start of one copy: the service, host, pid and a random part."""
    host = re.sub(r"[^A-Za-z0-9]+", "-", socket.gethostname())[:24].strip("-") or "host"
    return f"{service}-{host}-{os.getpid()}-{secrets.token_hex(3)}"


async def members_bucket(js: JetStreamContext, *, ttl_s: float, replicas: int = 1) -> KeyValue:
    """The membership bucket, created on first use (its TTL is fixed then)."""
    try:
        return await js.key_value(MEMBERS_BUCKET)
    except BucketNotFoundError:
        pass
    config = KeyValueConfig(
        bucket=MEMBERS_BUCKET,
        history=1,
        ttl=ttl_s,
        storage=StorageType.MEMORY if replicas == 1 else StorageType.FILE,
        replicas=replicas,
    )
    try:
        return await js.create_key_value(config)
    except Exception:  # another copy created it meanwhile
        return await js.key_value(MEMBERS_BUCKET)


class Membership:
    """This copy's heartbeat, and questions about the others."""

    def __init__(
        self, service: str, copy_id: str, *, ttl_s: float = DEFAULT_TTL_S, replicas: int = 1
    ) -> None:
        self.service = service
        self.copy_id = copy_id
        self.ttl_s = ttl_s
        self.replicas = replicas
        self._kv: KeyValue | None = None
        self._task: asyncio.Task[None] | None = None
        # Since when our own heartbeats have gone through without a gap.
        self._healthy_since: float | None = None
        self._last_beat = 0.0

    @property
    def key(self) -> str:
        return f"{self.service}.{self.copy_id}"

    async def start(self, js: JetStreamContext, *, patience_s: float = 60.0) -> None:
        """Write the first heartbeat (waiting out a bucket whose replicas elect a leader)."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                if self._kv is None:
                    self._kv = await members_bucket(js, ttl_s=self.ttl_s, replicas=self.replicas)
                await self._beat()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
        self._task = asyncio.create_task(self._heartbeats(), name=f"heartbeat-{self.copy_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._kv is not None:
            # Leaving on purpose: the others need not wait out the TTL.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._kv.delete(self.key), 2)

    async def _beat(self) -> None:
        assert self._kv is not None
        now = time.monotonic()
        try:
            await asyncio.wait_for(self._kv.put(self.key, b"%f" % time.time()), self.ttl_s / 4)
        except Exception:
            self._healthy_since = None
            raise
        if self._healthy_since is None or now - self._last_beat > self.ttl_s / 2:
            self._healthy_since = now  # a gap: judging restarts from here
        self._last_beat = now

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 4)
            try:
                await self._beat()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("heartbeat of %s failed (%s); retrying", self.copy_id, exc)

    @property
    def in_good_standing(self) -> bool:
        """Whether our own heartbeat is current: a copy that is not may have been replaced."""
        return time.monotonic() - self._last_beat < self.ttl_s

    @property
    def healthy_since(self) -> float | None:
        """Since when (``time.monotonic``) our heartbeats have gone through without a gap
        long enough for our key to expire; None while they fail. Another copy can have
        judged us dead only before this."""
        return self._healthy_since if self.in_good_standing else None

    def can_judge(self) -> bool:
        """Whether this copy has heard long enough to call another copy dead."""
        return (
            self._healthy_since is not None
            and time.monotonic() - self._healthy_since >= self.ttl_s
            and self.in_good_standing
        )

    async def alive(self, service: str, copy_id: str) -> bool:
        """Whether ``copy_id`` of ``service`` is alive (True whenever we cannot tell)."""
        if copy_id == self.copy_id and service == self.service:
            return True
        if self._kv is None or not self.can_judge():
            return True
        try:
            await asyncio.wait_for(self._kv.get(f"{service}.{copy_id}"), self.ttl_s / 2)
        except KeyNotFoundError:
            return False
        except Exception:
            return True  # no answer is no verdict
        return True

    async def copies(self, service: str) -> list[str]:
        """The live copies of ``service`` (as far as the bucket knows)."""
        if self._kv is None:
            return []
        try:
            keys = await self._kv.keys(filters=[f"{service}.*"])
        except NoKeysError:
            return []
        return sorted(k.split(".", 1)[1] for k in keys)
