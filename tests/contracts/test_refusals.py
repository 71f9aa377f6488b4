"""A refusal raised in a handler is answered in one place, against a real nats-server."""

import asyncio
import importlib
import pkgutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import ClassVar

import nats.errors
import pytest
from faststream.nats import NatsBroker, NatsRouter
from pydantic import BaseModel

import benchwright_shared.contracts as contracts
from benchwright_shared.bus import (
    MIDDLEWARES,
    ask,
    command_subscriber,
    declare_streams,
    jetstream,
    send_command,
)
from benchwright_shared.contracts import Contract, Problem
from benchwright_shared.refusal import ProblemReply, Refused

pytestmark = pytest.mark.connected


class Question(Contract):
    subject: ClassVar[str] = "bw.q.test.refusals.v1"  # each handler below has its own
    n: int = 0


class Answer(BaseModel):
    value: int = 0
    problem: Problem | None = None


class Order(Contract):
    subject: ClassVar[str] = "bw.cmd.test.refusals.v1"
    command_id: str


@dataclass
class Answering:
    broker: NatsBroker
    subjects: dict[str, str]
    # The command ids the refusing command handler was given, one per delivery.
    attempts: list[str]

    async def ask(self, kind: str, question: Question, timeout: float = 10.0) -> Answer:
        return await ask(
            self.broker, question, Answer, subject=self.subjects[kind], timeout=timeout
        )


@pytest.fixture
async def answering(nats_url: str) -> AsyncIterator[Answering]:
    """A broker with the platform's middlewares and three handlers: one answers, one
    refuses, one fails; and a command handler that refuses."""
    router = NatsRouter()
    attempts: list[str] = []
    suffix = uuid.uuid4().hex[:6]
    subjects = {kind: f"bw.q.test.{kind}_{suffix}.v1" for kind in ("answers", "refuses", "fails")}

    @router.subscriber(subjects["answers"])
    async def answers(question: Question) -> Answer:
        return Answer(value=question.n * 2)

    @router.subscriber(subjects["refuses"])
    async def refuses(question: Question) -> Answer:
        raise Refused(409, "taken", f"{question.n} is taken", field="n", code="n_taken")

    @router.subscriber(subjects["fails"])
    async def fails(question: Question) -> Answer:
        raise RuntimeError("a bug, not a refusal")

    @command_subscriber(router, Order.subject, service=f"t{suffix}", max_deliver=3)
    async def ordered(order: Order) -> None:
        attempts.append(order.command_id)
        raise Refused(409, "no", "commands are refused here")

    broker = NatsBroker(nats_url, logger=None, middlewares=MIDDLEWARES)
    broker.include_router(router)
    await broker.connect()
    await declare_streams(jetstream(broker))
    await broker.start()
    try:
        yield Answering(broker, subjects, attempts)
    finally:
        await broker.stop()


async def test_a_handler_that_answers_is_untouched(answering: Answering) -> None:
    answer = await answering.ask("answers", Question(n=21))
    assert (answer.value, answer.problem) == (42, None)


async def test_a_refusal_is_the_answer_with_its_field_and_code(answering: Answering) -> None:
    answer = await answering.ask("refuses", Question(n=7))
    assert answer.problem is not None
    assert answer.problem.status == 409
    assert (answer.problem.title, answer.problem.detail) == ("taken", "7 is taken")
    assert answer.problem.field == "n"
    assert answer.problem.extra == {"code": "n_taken"}
    # ... and it reads back, where the request came in, as the refusal that was raised.
    back = Refused.from_problem(answer.problem)
    assert (back.status, back.field, back.code) == (409, "n", "n_taken")


async def test_any_other_error_is_not_turned_into_a_refusal(answering: Answering) -> None:
    # Nothing answers: the asker times out rather than reading a bug as a refusal.
    with pytest.raises(nats.errors.TimeoutError):
        await answering.ask("fails", Question(n=1), timeout=1.0)


async def test_a_refused_command_is_still_redelivered_not_answered(answering: Answering) -> None:
    attempts = answering.attempts
    order = Order(command_id=str(uuid.uuid4()))
    await send_command(answering.broker, order)
    for _ in range(60):
        if len(attempts) >= 3:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # would a fourth delivery come?
    assert attempts == [order.command_id] * 3


# Replies that name what they answer about: their handlers answer a problem themselves.
ANSWERED_BY_THEIR_HANDLERS = {"SubsetRows", "ImplCode", "RebuildResult", "ParkedMessages"}


def reply_contracts() -> list[type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for module in pkgutil.iter_modules(contracts.__path__):
        loaded = importlib.import_module(f"{contracts.__name__}.{module.name}")
        for name, value in vars(loaded).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and "problem" in value.model_fields
            ):
                found[name] = value
    return [found[name] for name in sorted(found)]


@pytest.mark.parametrize("reply", reply_contracts(), ids=lambda reply: reply.__name__)
def test_every_reply_reads_a_refusal(reply: type[BaseModel]) -> None:
    """What the middleware answers parses as whichever reply type the asker expects."""
    if reply.__name__ in ANSWERED_BY_THEIR_HANDLERS:
        required = {name for name, info in reply.model_fields.items() if info.is_required()}
        assert required, f"{reply.__name__} can read a ProblemReply now: drop it from the list"
        return
    problem = Refused(404, detail="gone", field="id", code="not_found").problem()
    answer = reply.model_validate_json(ProblemReply(problem=problem).model_dump_json())
    assert answer.problem == problem
