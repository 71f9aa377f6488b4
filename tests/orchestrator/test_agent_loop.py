"""The platform's agent loop over a real directory and real processes.

``DirSandbox`` is the ``TaskSandbox`` port over a temp dir (the sandbox's ``/`` is
the dir, so ``/app`` is ``<dir>/app``) with commands run by a real bash, so the
shell tool really runs. The model is the scripted one, in process or over HTTP.
"""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchwright_orchestrator.agents.loop import SYSTEM_PROMPT, AgentLimits, AttemptRef, run_agent
from benchwright_orchestrator.agents.openai_model import ProxyAgentModel
from benchwright_orchestrator.agents.ports import (
    APP_DIR,
    AgentEvent,
    ExecResult,
    ModelRefused,
    ModelReply,
)
from benchwright_orchestrator.agents.tools import TOOL_NAMES, TOOL_SCHEMAS, run_tool
from benchwright_shared.contracts.agent_events import (
    TEXT_CAP,
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolResult,
)
from tests.support.scripted_agent_model import (
    COST_MICROS_PER_TURN,
    ScriptBook,
    ScriptedAgentModel,
    ScriptedAgentServer,
    call,
    calls,
    final,
)

REF = AttemptRef(task_id="t-1", index=0, trial=0, attempt=1, model="m@fake")


class DirSandbox:
    """``TaskSandbox`` over a local directory standing for the sandbox's ``/``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / APP_DIR.lstrip("/")).mkdir(parents=True, exist_ok=True)
        self.commands: list[Sequence[str]] = []

    def local(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    async def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = APP_DIR,
        timeout_s: float | None = None,
    ) -> ExecResult:
        self.commands.append(list(argv))
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.local(cwd),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(
                process.communicate(stdin.encode() if stdin else None), timeout_s
            )
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        return ExecResult(
            process.returncode or 0,
            out.decode(),
            err.decode(),
            int((time.monotonic() - started) * 1000),
        )

    async def write(self, path: str, content: str) -> None:
        target = self.local(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)

    async def read(self, path: str) -> str:
        return self.local(path).read_text()


class Recorder:
    """``Trajectory`` that keeps the events in order, and which of them each save took."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.kept: list[str] = []
        self.saves: list[list[str]] = []
        self._unsaved: list[str] = []

    async def record(self, event: AgentEvent, *, save: bool = True) -> None:
        self.events.append(event)
        self._unsaved.append(type(event).__name__)
        if save:
            self.saves.append(self._unsaved)
            self._unsaved = []

    async def keep(self, text: str) -> str | None:
        self.kept.append(text)
        return f"kept-{len(self.kept)}"

    def of[E](self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


class FakeClock:
    """Time that moves only when told to, by ``step_s`` per reading."""

    def __init__(self, step_s: float = 0.0) -> None:
        self.now = 1000.0
        self.step_s = step_s

    def __call__(self) -> float:
        self.now += self.step_s
        return self.now


@pytest.fixture
def sandbox(tmp_path: Path) -> DirSandbox:
    return DirSandbox(tmp_path)


async def _run(
    instruction: str,
    book: ScriptBook,
    sandbox: DirSandbox,
    limits: AgentLimits | None = None,
    **kwargs: Any,
) -> tuple[Any, Recorder]:
    trajectory = Recorder()
    end = await run_agent(
        instruction,
        attempt=REF,
        model=ScriptedAgentModel(book),
        sandbox=sandbox,
        trajectory=trajectory,
        limits=limits or AgentLimits(max_turns=10),
        **kwargs,
    )
    return end, trajectory


SOLVE = ScriptBook(
    {
        "hello.txt": [
            call("shell", command="ls -a"),
            call("write_file", path="hello.txt", content="hello world\n"),
            call("shell", command="cat hello.txt && test -f hello.txt"),
            final("I wrote hello.txt."),
        ]
    }
)


async def test_the_agent_solves_a_task_by_writing_a_file(sandbox: DirSandbox) -> None:
    end, trajectory = await _run("Write 'hello world' to /app/hello.txt.", SOLVE, sandbox)

    assert (sandbox.root / "app" / "hello.txt").read_text() == "hello world\n"
    assert (end.reason, end.turns, end.final_text) == ("done", 4, "I wrote hello.txt.")
    assert end.cost_micros == 4 * COST_MICROS_PER_TURN
    kinds = [type(e).__name__ for e in trajectory.events]
    assert kinds == [
        "AgentAttemptStarted",
        *["AgentModelTurn", "AgentToolResult"] * 3,
        "AgentModelTurn",
        "AgentAttemptEnded",
    ]
    # One save a turn: the model's turn goes with its tool result, the last with the end.
    assert trajectory.saves == [
        ["AgentAttemptStarted"],
        *[["AgentModelTurn", "AgentToolResult"]] * 3,
        ["AgentModelTurn", "AgentAttemptEnded"],
    ]
    started = trajectory.of(AgentAttemptStarted)[0]
    assert (started.agent, started.model, started.tools) == ("benchwright", "m@fake", [*TOOL_NAMES])
    assert started.system_prompt == SYSTEM_PROMPT and started.instruction.startswith("Write")
    turns = trajectory.of(AgentModelTurn)
    assert [t.turn for t in turns] == [1, 2, 3, 4]
    # The conversation grows by the assistant message and one tool message per turn.
    assert [t.messages_in_count for t in turns] == [2, 4, 6, 8]
    assert turns[1].tool_calls[0].name == "write_file"
    assert turns[1].tool_calls[0].arguments == {"path": "hello.txt", "content": "hello world\n"}
    assert turns[-1].finish_reason == "stop" and turns[-1].text == "I wrote hello.txt."
    results = trajectory.of(AgentToolResult)
    assert [r.call_id for r in results] == [t.tool_calls[0].id for t in turns[:3]]
    assert results[2].exit_code == 0 and "hello world" in results[2].output
    assert results[1].output == "wrote 12 bytes to /app/hello.txt"
    ended = trajectory.of(AgentAttemptEnded)[0]
    assert (ended.reason, ended.turns, ended.tokens) == ("done", 4, end.tokens)
    assert all((e.task_id, e.index, e.attempt) == ("t-1", 0, 1) for e in trajectory.events)


async def test_messages_follow_openai_tool_calling(sandbox: DirSandbox) -> None:
    model = ScriptedAgentModel(SOLVE)
    await run_agent(
        "Write hello.txt",
        attempt=REF,
        model=model,
        sandbox=sandbox,
        trajectory=Recorder(),
        limits=AgentLimits(),
    )
    last = model.book.seen[-1]
    assert [m["role"] for m in last] == ["system", "user"] + ["assistant", "tool"] * 3
    assistant, tool = last[4], last[5]
    call_id = assistant["tool_calls"][0]["id"]
    assert assistant["tool_calls"][0]["function"]["name"] == "write_file"
    assert tool == {"role": "tool", "tool_call_id": call_id, "content": tool["content"]}


async def test_max_turns_stops_an_agent_that_never_stops(sandbox: DirSandbox) -> None:
    book = ScriptBook({"loop": [call("shell", command="true")] * 50})
    end, trajectory = await _run("loop forever", book, sandbox, AgentLimits(max_turns=3))
    assert (end.reason, end.turns) == ("max_turns", 3)
    assert len(trajectory.of(AgentToolResult)) == 3
    assert trajectory.of(AgentAttemptEnded)[0].reason == "max_turns"


async def test_max_tokens_and_cost_end_the_attempt(sandbox: DirSandbox) -> None:
    book = ScriptBook({"loop": [call("shell", command="true")] * 50})
    end, _ = await _run("loop", book, sandbox, AgentLimits(max_tokens=100))
    # 2 messages then 4: (20 + 20) + (40 + 20) tokens reach 100 after the second turn.
    assert (end.reason, end.turns, end.tokens) == ("max_tokens", 2, 100)
    end, _ = await _run("loop", book, sandbox, AgentLimits(cost_micros=3 * COST_MICROS_PER_TURN))
    assert (end.reason, end.turns) == ("cost", 3)


async def test_wall_time_ends_the_attempt_between_turns(sandbox: DirSandbox) -> None:
    book = ScriptBook({"loop": [call("shell", command="true")] * 50})
    clock = FakeClock(step_s=1.0)
    end, trajectory = await _run(
        "loop", book, sandbox, AgentLimits(max_turns=50, wall_time_s=10), clock=clock
    )
    assert end.reason == "wall_time"
    assert 1 <= end.turns < 10
    assert trajectory.of(AgentAttemptEnded)[0].duration_ms >= 10_000


async def test_a_shell_command_is_cut_to_the_time_left(sandbox: DirSandbox) -> None:
    book = ScriptBook({"sleep": [call("shell", command="sleep 5", timeout_s=60), final("ok")]})
    started = time.monotonic()
    end, trajectory = await _run("sleep", book, sandbox, AgentLimits(wall_time_s=1.5))
    result = trajectory.of(AgentToolResult)[0]
    assert result.is_error and "did not finish" in result.output
    assert time.monotonic() - started < 4
    assert end.reason == "wall_time"


class RefusingModel:
    def __init__(self, reason: str, after: int = 0) -> None:
        self.inner = ScriptedAgentModel(ScriptBook({}, default=[call("shell", command="true")] * 9))
        self.reason, self.after = reason, after

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelReply:
        if self.inner.calls >= self.after:
            raise ModelRefused(self.reason, "ceiling reached")
        return await self.inner.complete(messages, tools)


@pytest.mark.parametrize(("refusal", "reason"), [("cost", "cost"), ("model_error", "model_error")])
async def test_a_refusing_model_ends_the_attempt(
    sandbox: DirSandbox, refusal: str, reason: str
) -> None:
    trajectory = Recorder()
    end = await run_agent(
        "anything",
        attempt=REF,
        model=RefusingModel(refusal, after=2),
        sandbox=sandbox,
        trajectory=trajectory,
        limits=AgentLimits(),
    )
    assert (end.reason, end.turns, end.detail) == (reason, 2, "ceiling reached")
    assert trajectory.of(AgentAttemptEnded)[0].detail == "ceiling reached"


async def test_a_turn_with_several_tool_calls_is_saved_once_with_all_its_results(
    sandbox: DirSandbox,
) -> None:
    book = ScriptBook(
        {
            "two": [
                calls(("shell", {"command": "echo a"}), ("shell", {"command": "echo b"})),
                final("done"),
            ]
        }
    )
    end, trajectory = await _run("two calls", book, sandbox)
    assert (end.reason, end.turns) == ("done", 2)
    assert trajectory.saves == [
        ["AgentAttemptStarted"],
        ["AgentModelTurn", "AgentToolResult", "AgentToolResult"],
        ["AgentModelTurn", "AgentAttemptEnded"],
    ]
    assert [r.output.split("\n")[0] for r in trajectory.of(AgentToolResult)] == ["a", "b"]


async def test_a_halt_stops_the_agent_within_one_model_call_and_one_tool_call(
    sandbox: DirSandbox,
) -> None:
    flag = {"halted": False}
    book = ScriptBook(
        {"two": [calls(("shell", {"command": "echo a"}), ("shell", {"command": "echo b"}))] * 9}
    )

    class HaltingSandbox(DirSandbox):
        async def exec(self, argv: Sequence[str], **kwargs: Any) -> ExecResult:
            flag["halted"] = True  # the halt arrives while the first command runs
            return await super().exec(argv, **kwargs)

    halting = HaltingSandbox(sandbox.root)
    end, trajectory = await _run("two calls", book, halting, halted=lambda: flag["halted"])
    assert end.reason == "halted"
    assert (end.turns, len(halting.commands)) == (1, 1)
    assert [type(e).__name__ for e in trajectory.events][-2:] == [
        "AgentToolResult",
        "AgentAttemptEnded",
    ]
    # Halted before it began: no model call at all.
    end, trajectory = await _run("two calls", book, sandbox, halted=lambda: True)
    assert (end.reason, end.turns) == ("halted", 0)


async def test_bad_tool_calls_become_tool_errors_the_model_sees(sandbox: DirSandbox) -> None:
    (sandbox.root / "app" / "f.py").write_text("x = 1\nx = 1\ny = 2\n")
    book = ScriptBook(
        {
            "bad": [
                call("rm_rf", path="/"),
                call("shell", "{not json"),
                call("shell", "[1, 2]"),
                call("write_file", path="a.txt"),
                call("shell", command=["ls"]),
                call("edit_file", path="f.py", old="z = 3", new="z = 4"),
                call("edit_file", path="f.py", old="x = 1", new="x = 2"),
                call("edit_file", path="f.py", old="y = 2", new="y = 3"),
                call("read_file", path="missing.txt"),
                call("shell", command="exit 3"),
                final("gave up"),
            ]
        }
    )
    model = ScriptedAgentModel(book)
    trajectory = Recorder()
    end = await run_agent(
        "bad calls",
        attempt=REF,
        model=model,
        sandbox=sandbox,
        trajectory=trajectory,
        limits=AgentLimits(max_turns=20),
    )
    assert end.reason == "done"
    results = trajectory.of(AgentToolResult)
    outputs = [r.output for r in results]
    assert [r.is_error for r in results] == [True] * 7 + [False, True, False]
    assert "no tool named 'rm_rf'" in outputs[0] and "shell" in outputs[0]
    assert "not valid JSON" in outputs[1]
    assert "must be a JSON object" in outputs[2]
    assert "missing required argument 'content'" in outputs[3]
    assert "'command' must be a string" in outputs[4]
    assert "does not occur in /app/f.py" in outputs[5]
    assert "occurs 2 times in /app/f.py" in outputs[6]
    assert outputs[7] == "replaced 1 occurrence in /app/f.py"
    assert "No such file" in outputs[8] and "missing.txt" in outputs[8]
    assert (results[9].exit_code, results[9].is_error) == (3, False)
    assert "[exit code: 3]" in outputs[9]
    assert (sandbox.root / "app" / "f.py").read_text() == "x = 1\nx = 1\ny = 3\n"
    # The model saw each error as the answer to its call.
    tool_messages = [m for m in model.book.seen[-1] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == outputs
    # Arguments that are not a JSON object are kept raw in the event.
    turn = trajectory.of(AgentModelTurn)[1]
    assert turn.tool_calls[0].raw_arguments == "{not json"


async def test_outputs_are_capped_in_events_and_for_the_model(sandbox: DirSandbox) -> None:
    book = ScriptBook(
        {"big": [call("shell", command="head -c 20000 /dev/zero | tr '\\0' a"), final("x" * 9000)]}
    )
    model = ScriptedAgentModel(book)
    trajectory = Recorder()
    await run_agent(
        "big output",
        attempt=REF,
        model=model,
        sandbox=sandbox,
        trajectory=trajectory,
        limits=AgentLimits(tool_output_chars=1000),
    )
    result = trajectory.of(AgentToolResult)[0]
    assert result.truncated and len(result.output) == TEXT_CAP
    assert result.output_chars == 20000 + len("\n[exit code: 0]")
    # The whole output is kept outside the log, named in the event.
    assert trajectory.kept == ["a" * 20000 + "\n[exit code: 0]"]
    assert result.output_object == "kept-1"
    seen = next(m for m in model.book.seen[-1] if m["role"] == "tool")["content"]
    assert seen.startswith("a" * 1000) and "[output cut:" in seen and len(seen) < 1100
    last = trajectory.of(AgentModelTurn)[-1]
    assert last.text_truncated and last.text_chars == 9000 and len(last.text or "") == TEXT_CAP


async def test_run_tool_schemas_cover_every_tool(sandbox: DirSandbox) -> None:
    assert [t["function"]["name"] for t in TOOL_SCHEMAS] == list(TOOL_NAMES)
    edit = next(t for t in TOOL_SCHEMAS if t["function"]["name"] == "edit_file")
    assert edit["function"]["parameters"]["required"] == ["path", "old", "new"]
    outcome = await run_tool(sandbox, "shell", '{"command": "pwd"}')
    assert outcome.output.splitlines()[0] == str(sandbox.root / "app")


# -- the HTTP adapter against the scripted server ---------------------------------------
@pytest.fixture
def server() -> Iterator[ScriptedAgentServer]:
    scripted = ScriptedAgentServer(SOLVE)
    scripted.start()
    yield scripted
    scripted.stop()


@pytest.fixture
async def proxy_model(server: ScriptedAgentServer) -> AsyncIterator[ProxyAgentModel]:
    model = ProxyAgentModel(
        server.base_url, "run-key", "fake-model", {"x-benchwright-task": "t-1"}, backoff_s=0.01
    )
    yield model
    await model.aclose()


async def test_the_adapter_drives_the_loop_over_http(
    server: ScriptedAgentServer, proxy_model: ProxyAgentModel, sandbox: DirSandbox
) -> None:
    trajectory = Recorder()
    end = await run_agent(
        "Write /app/hello.txt",
        attempt=REF,
        model=proxy_model,
        sandbox=sandbox,
        trajectory=trajectory,
        limits=AgentLimits(),
    )
    assert (end.reason, end.turns) == ("done", 4)
    assert (sandbox.root / "app" / "hello.txt").read_text() == "hello world\n"
    assert end.cost_micros == 4 * COST_MICROS_PER_TURN
    assert trajectory.of(AgentModelTurn)[0].input_tokens == 20
    first = server.requests[0]
    assert first["headers"]["authorization"] == "Bearer run-key"
    assert first["headers"]["x-benchwright-task"] == "t-1"
    assert first["body"]["model"] == "fake-model"
    assert [t["function"]["name"] for t in first["body"]["tools"]] == list(TOOL_NAMES)
    last = server.requests[-1]["body"]["messages"]
    assert (
        last[-1]["role"] == "tool" and last[-2]["tool_calls"][0]["id"] == last[-1]["tool_call_id"]
    )


async def test_the_adapter_retries_then_maps_errors(server: ScriptedAgentServer) -> None:
    model = ProxyAgentModel(server.base_url, "k", "m", backoff_s=0.01, retries=2)
    messages = [{"role": "user", "content": "hello.txt"}]
    try:
        server.failures[:] = [(503, {}), (429, {"retry-after": "0"})]
        reply = await model.complete(messages, TOOL_SCHEMAS)
        assert reply.tool_calls[0].name == "shell" and len(server.requests) == 3

        server.failures[:] = [(503, {})] * 3
        with pytest.raises(ModelRefused) as refused:
            await model.complete(messages, TOOL_SCHEMAS)
        assert refused.value.reason == "model_error" and "503" in refused.value.detail

        server.failures[:] = [(402, {})]
        with pytest.raises(ModelRefused) as refused:
            await model.complete(messages, TOOL_SCHEMAS)
        assert refused.value.reason == "cost"

        before = len(server.requests)
        server.failures[:] = [(400, {}), (503, {})]
        with pytest.raises(ModelRefused) as refused:
            await model.complete(messages, TOOL_SCHEMAS)
        assert refused.value.reason == "model_error" and len(server.requests) == before + 1
    finally:
        await model.aclose()


async def test_the_adapter_refuses_when_nothing_listens() -> None:
    model = ProxyAgentModel("http://127.0.0.1:9/v1", "k", "m", backoff_s=0.01, retries=1)
    try:
        with pytest.raises(ModelRefused) as refused:
            await model.complete([{"role": "user", "content": "x"}], [])
        assert refused.value.reason == "model_error"
    finally:
        await model.aclose()
