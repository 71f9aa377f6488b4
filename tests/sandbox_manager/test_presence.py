"""What a run page hears of the tasks a sweep began: at once, and again for late pages."""

import asyncio
from typing import Any, cast

from faststream.nats import NatsBroker

from benchwright_sandbox_manager.presence import FLUSH_S, StartedTasks
from benchwright_shared import subjects

RUN = "0f0e0d0c-0b0a-4908-8706-050403020100"


class Heard:
    """A broker that keeps what was published (no NATS needed for the timing rule)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []

    async def publish(self, message: Any, subject: str) -> None:
        self.messages.append((subject, message))


async def test_begun_tasks_go_out_together_then_again_until_they_settle() -> None:
    broker = Heard()
    started = StartedTasks(cast(NatsBroker, broker), RUN, repeat_s=FLUSH_S * 2)
    started.heard(0, 1)
    started.heard(1, 1)
    await asyncio.sleep(FLUSH_S * 1.5)
    assert broker.messages == [(subjects.live_subject(RUN), {"started": [[0, 1], [1, 1]]})]
    started.settled(0, 1)
    # A page opened now heard nothing of task 1: it is told again, task 0 is not.
    await asyncio.sleep(FLUSH_S * 2)
    assert broker.messages[-1] == (subjects.live_subject(RUN), {"started": [[1, 1]]})
    started.settled(1, 1)
    count = len(broker.messages)
    await asyncio.sleep(FLUSH_S * 3)
    assert len(broker.messages) == count  # nothing in flight: nothing repeated
    await started.close()
    started_again = len(broker.messages)
    await asyncio.sleep(FLUSH_S * 3)
    assert len(broker.messages) == started_again
