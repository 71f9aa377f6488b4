"""Correlating replies with the commands that asked for them.

Commands travel durably on JetStream, so there is no reply inbox; the service
that handles a command publishes an event carrying the ``command_id``. Every
orchestrator process sees every such event and keeps the ones it awaits.
"""

import asyncio

from benchwright_shared.contracts import Contract


class Replies:
    def __init__(self) -> None:
        self._queues: dict[str, asyncio.Queue[Contract]] = {}

    def expect(self, command_id: str) -> asyncio.Queue[Contract]:
        """Start collecting replies to ``command_id`` (call before sending it)."""
        return self._queues.setdefault(command_id, asyncio.Queue())

    def forget(self, command_id: str) -> None:
        self._queues.pop(command_id, None)

    def deliver(self, command_id: str, event: Contract) -> bool:
        queue = self._queues.get(command_id)
        if queue is None:
            return False
        queue.put_nowait(event)
        return True
