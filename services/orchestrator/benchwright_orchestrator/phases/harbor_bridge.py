"""The Harbor bridge: Harbor's own agents (``agent: "harbor:<name>"``) at an attempt.

The agent runs in a child process (``agents.harbor_child``), so Harbor's imports and
any crash of its agent stay out of the orchestrator. Its environment relays each
exec, upload and download here over the child's stdin/stdout (``agents.harbor_wire``);
each is carried out in the attempt's task sandbox with ``exec_in`` and recorded as an
``AgentToolResult`` (turn 0: the bridge sees the agent's commands, not its model
turns). The child holds the run's proxy key and no other; its environment is built
from nothing of the orchestrator's but ``PATH`` and ``PYTHONPATH``.

What the model calls cost is what the proxy stamped on each answer, which the child
reports call by call (``ChildSpent``) and the session sums: the attempt's row and its
``AgentAttemptEnded`` carry that cost, those tokens and that count of calls (as the
platform's own agent's do), an attempt cut short by its timeout included.

Bounds: the task's agent timeout covers the whole child (each exec gets at most what
is left of it), a reply line at most ``LINE_LIMIT`` bytes, the child's stderr kept to
its last ``STDERR_KEEP`` bytes. A timeout, a halt or a crash kills the child; a child
that exits without saying ``done``, or whose agent raised, makes the trial an error
row naming it.

Harbor's installed agents (``harbor:claude-code``, ``harbor:codex``) run their CLI in
the sandbox,
where it must already be: nothing is installed (Harbor's ``skip_install``), the
binary is looked for first on the sandbox's ``PATH`` with the operator's agent
directory (``AGENT_BIN_MOUNT``) before it, and an attempt without it is an error row
naming it (``agent_unavailable``). Each of the agent's execs runs under the product
driver's relay (``agents/product_driver.py``, its ``exec`` mode): the CLI's
``ANTHROPIC_BASE_URL``/``OPENAI_BASE_URL`` lead to a loopback relay that adds the
task and trial and passes each call to the run's proxy, whose stamps it reports
call by call on stderr after a per-attempt mark. The CLI holds the run's proxy key,
never a provider's. Codex reads its base URL from the ``config.toml`` Harbor writes
before it runs, so its relay listens on a loopback port the bridge picks for the
attempt (``relay_port``) and Harbor is handed that address; Claude Code reads its
address from the environment the relay sets.

``harbor:terminus-2`` drives a tmux session. Each exec in a task sandbox is a process
tree of its own, so a tmux server started by one would die with it: the bridge holds
one ``tmux -D`` server for the agent's lifetime as a long exec, its socket under
``/logs/agent``, which every exec of the attempt sees.
"""

import asyncio
import base64
import collections
import contextlib
import errno
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from benchwright_orchestrator.agents.harbor_wire import (
    CHILD_MODULE,
    BridgeConfig,
    BridgeModel,
    ChildDone,
    ChildRequest,
    ChildSpent,
    ParentReply,
    read_child_line,
)
from benchwright_orchestrator.agents.loop import AttemptEnd, AttemptRef
from benchwright_orchestrator.phases.harbor_attempts import HarborAttempts
from benchwright_orchestrator.phases.harbor_product import DRIVER_PYTHON, driver_source
from benchwright_orchestrator.phases.task_sandbox import WorkspaceTaskSandbox
from benchwright_orchestrator.ports import PhaseError
from benchwright_shared.agentic import AgenticTask
from benchwright_shared.contracts import SandboxExecFinished
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentToolResult,
    AttemptEndReason,
    cap_text,
)
from benchwright_shared.hashing import canonical_json
from benchwright_shared.settings import AGENT_BIN_MOUNT

__all__ = ["BRIDGE_AGENTS", "BRIDGE_PREFIX", "agent_dirs", "run_bridged"]

BRIDGE_PREFIX = "harbor:"
# Harbor's installed agents the bridge runs, by the CLI each needs in the sandbox.
INSTALLED_AGENTS = {"claude-code": "claude", "codex": "codex"}
# Those whose CLI speaks OpenAI's API (the proxy's /v1/responses), not Anthropic's.
OPENAI_CLIS = frozenset({"codex"})
# Places outside the task's own that an installed agent writes to across its commands:
# Harbor keeps Codex's home (its config.toml and key) under /installed-agent.
AGENT_DIRS = {"codex": ("/installed-agent",)}
# Where an attempt's fixed relay port is drawn from: high, clear of the usual services'.
RELAY_PORTS = range(20_000, 60_000)
# Harbor's agents the bridge runs; those that call a model get the run's proxy.
MODEL_AGENTS = ("terminus-2", *INSTALLED_AGENTS)
BRIDGE_AGENTS = tuple(f"{BRIDGE_PREFIX}{n}" for n in ("oracle", "nop", *MODEL_AGENTS))
DEFAULT_AGENT_TIMEOUT_S = 600.0
LINE_LIMIT = 8 * 1024 * 1024
STDERR_KEEP = 8192
# Largest file a download carries: the sandbox's output cap less base64's growth.
MAX_DOWNLOAD_BYTES = 48_000
TMUX_DIR = "/logs/agent"
TMUX_READY_S = 10.0
EXIT_GRACE_S = 5.0
# A sandbox's PATH when its environment names none (a Debian image's).
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
FILE_TIMEOUT_S = 60.0
DOWNLOAD_SCRIPT = (
    's=$(stat -c %s -- "$1") || exit 1; '
    f'if [ "$s" -gt {MAX_DOWNLOAD_BYTES} ]; then echo "too large: $s bytes" >&2; exit 27; fi; '
    'exec base64 -w0 -- "$1"'
)
UPLOAD_SCRIPT = 'mkdir -p -- "$(dirname -- "$1")" && base64 -d > "$1"'


def agent_dirs(agent: str) -> tuple[str, ...]:
    """The writable places ``agent``'s sandbox needs besides the task's."""
    return AGENT_DIRS.get(agent.removeprefix(BRIDGE_PREFIX), ())


async def run_bridged(
    harbor: HarborAttempts, task: AgenticTask, box: WorkspaceTaskSandbox, ref: AttemptRef
) -> AttemptEnd:
    name = harbor.agent.removeprefix(BRIDGE_PREFIX)
    timeout_s = float(task.config.agent.timeout_sec or DEFAULT_AGENT_TIMEOUT_S)
    ids: dict[str, Any] = {
        "task_id": ref.task_id,
        "index": ref.index,
        "trial": ref.trial,
        "attempt": ref.attempt,
    }
    shown, cut, chars = cap_text(task.instruction)
    await harbor.trajectory.record(
        AgentAttemptStarted(
            **ids,
            agent=ref.agent,
            model=ref.model if name in MODEL_AGENTS else None,
            instruction=shown,
            instruction_truncated=cut,
            instruction_chars=chars,
            tools=["exec", "upload", "download"],
        )
    )
    began = time.monotonic()
    if name in INSTALLED_AGENTS:
        await _find_cli(harbor, box, ids, name)
    session = _Session(harbor, box, ref, deadline=began + timeout_s)
    session.installed = name in INSTALLED_AGENTS
    if name in OPENAI_CLIS:
        session.relay_port = RELAY_PORTS[secrets.randbelow(len(RELAY_PORTS))]
    config = BridgeConfig(
        agent=name,
        task_name=task.name,
        instruction=task.instruction,
        task_files={p: c.decode() for p, c in task.files.items() if not p.startswith("tests/")},
        workdir=harbor.plans[task.name].workdir,
        timeout_s=timeout_s,
        model=_model(harbor, ref, name, session.relay_port) if name in MODEL_AGENTS else None,
        installed=session.installed,
    )
    reason: AttemptEndReason = "done"
    done: ChildDone | None = None
    try:
        async with contextlib.AsyncExitStack() as stack:
            if name == "terminus-2":
                await stack.enter_async_context(_tmux_server(box, timeout_s))
            async with asyncio.timeout(timeout_s):
                done = await session.run(config)
    except TimeoutError:
        reason = "wall_time"
    ms = int((time.monotonic() - began) * 1000)
    # An agent that crashed still spent what it spent: its end event says so.
    if done is None and reason != "wall_time":
        detail = f"harbor's {name} agent exited without finishing: {session.stderr_tail()}"
        await _ended(harbor, ids, ms, detail, session.spent("crashed"))
        raise PhaseError("agent_crashed", detail)
    if done is not None and done.error is not None:
        detail = f"harbor's {name} agent failed: {done.error}"
        await _ended(harbor, ids, ms, detail, session.spent("crashed"))
        raise PhaseError("agent_error", detail)
    spent = session.spent(reason)
    await _ended(harbor, ids, ms, None, spent)
    return spent


def _model(
    harbor: HarborAttempts, ref: AttemptRef, name: str, relay_port: int | None
) -> BridgeModel:
    model = harbor.model
    if name in OPENAI_CLIS:
        # Harbor writes this address into the CLI's config: the relay's, in the sandbox.
        return BridgeModel(
            name=f"openai/{model.model_id}",
            api_base=f"http://127.0.0.1:{relay_port}/v1",
            api_key=model.proxy_key,
        )
    if name in INSTALLED_AGENTS:
        # Harbor hands these to the CLI; in the sandbox the driver's relay replaces the URL.
        return BridgeModel(
            name=f"anthropic/{model.model_id}",
            api_base=model.proxy_url.rstrip("/"),
            api_key=model.proxy_key,
        )
    return BridgeModel(
        name=f"openai/{model.model_id}",
        api_base=model.proxy_url.rstrip("/") + "/v1",
        api_key=model.proxy_key,
        headers={"x-benchwright-task": str(ref.index), "x-benchwright-trial": str(ref.trial)},
    )


async def _find_cli(
    harbor: HarborAttempts, box: WorkspaceTaskSandbox, ids: dict[str, Any], name: str
) -> None:
    """The installed agent's CLI on the sandbox's PATH, the operator's directory first;
    ``PhaseError`` (``agent_unavailable``) naming it when it is not there."""
    path = box.env.get("PATH") or SANDBOX_PATH
    box.env = {**box.env, "PATH": f"{AGENT_BIN_MOUNT}:{path}"}
    binary = INSTALLED_AGENTS[name]
    look = 'for n; do command -v -- "$n" >/dev/null || echo "$n"; done'
    found = await box.exec(["sh", "-c", look, "sh", binary, DRIVER_PYTHON], timeout_s=30)
    missing = found.stdout.split() if found.exit_code == 0 else [binary]
    if not missing:
        return
    if binary in missing:
        detail = (
            f"harbor's {name} agent runs the {binary!r} CLI, which is not in this task's "
            f"sandbox (PATH {box.env['PATH']}); the platform installs no agent: put it in "
            "the task's image or in the operator's agent directory (BW_AGENT_BIN_DIR)"
        )
    else:
        detail = (
            f"harbor's {name} agent needs {DRIVER_PYTHON!r} in the task's sandbox, for the "
            f"relay that leads its CLI's calls to the run's proxy (PATH {box.env['PATH']})"
        )
    await _ended(harbor, ids, 0, detail, AttemptEnd("crashed", 0, 0, 0, None))
    raise PhaseError("agent_unavailable", detail)


async def _ended(
    harbor: HarborAttempts, ids: dict[str, Any], ms: int, detail: str | None, spent: AttemptEnd
) -> None:
    await harbor.trajectory.record(
        AgentAttemptEnded(
            **ids,
            reason=spent.reason,
            turns=spent.turns,
            tokens=spent.tokens,
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
            cost_micros=spent.cost_micros,
            duration_ms=ms,
            detail=detail,
        )
    )


@contextlib.asynccontextmanager
async def _tmux_server(box: WorkspaceTaskSandbox, timeout_s: float) -> AsyncIterator[None]:
    """A tmux server held for the agent's lifetime, its socket where every exec sees it."""
    box.env = {**box.env, "TMUX_TMPDIR": TMUX_DIR}
    server = asyncio.ensure_future(box.exec(["tmux", "-D"], timeout_s=timeout_s + 30))
    try:
        waited = time.monotonic() + TMUX_READY_S
        while True:
            ready = await box.exec(["tmux", "list-sessions"], timeout_s=TMUX_READY_S)
            # Without a session the server answers "no sessions"; absent, "no server".
            if ready.exit_code == 0 or "no sessions" in ready.stderr:
                break
            if server.done() or time.monotonic() > waited:
                raise PhaseError("agent_crashed", f"no tmux server: {ready.stderr[-300:]}")
            await asyncio.sleep(0.1)
        yield
    finally:
        with contextlib.suppress(Exception):
            await box.exec(["tmux", "kill-server"], timeout_s=TMUX_READY_S)
        server.cancel()
        with contextlib.suppress(BaseException):
            await server


class _Session:
    """One child: its requests carried out in the sandbox, each recorded."""

    def __init__(
        self, harbor: HarborAttempts, box: WorkspaceTaskSandbox, ref: AttemptRef, deadline: float
    ) -> None:
        self.harbor, self.box, self.ref, self.deadline = harbor, box, ref, deadline
        self.stderr: collections.deque[bytes] = collections.deque()
        self.stderr_bytes = 0
        self.calls: list[ChildSpent] = []
        # An installed agent's execs run under the driver's relay; its lines carry this.
        self.installed = False
        # The relay's loopback port, when the CLI must be told it before it runs.
        self.relay_port: int | None = None
        self.mark = f"bw-spent-{secrets.token_hex(8)}"

    def spent(self, reason: AttemptEndReason) -> AttemptEnd:
        """The attempt's model calls as the proxy metered them; no cost when none was."""
        return AttemptEnd(
            reason=reason,
            # Each call the proxy answered: the row's ``calls``, as for our own agent's turns.
            turns=len(self.calls),
            input_tokens=sum(c.input_tokens for c in self.calls),
            output_tokens=sum(c.output_tokens for c in self.calls),
            cost_micros=sum(c.cost_micros for c in self.calls) if self.calls else None,
        )

    def stderr_tail(self) -> str:
        return b"".join(self.stderr)[-STDERR_KEEP:].decode(errors="replace").strip()[-2000:]

    async def run(self, config: BridgeConfig) -> ChildDone | None:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            CHILD_MODULE,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_child_env(),
            limit=LINE_LIMIT,
        )
        assert child.stdin and child.stdout and child.stderr
        draining = asyncio.create_task(self._drain(child.stderr))
        try:
            child.stdin.write(config.model_dump_json().encode() + b"\n")
            await child.stdin.drain()
            while line := await child.stdout.readline():
                said = read_child_line(line)
                if isinstance(said, ChildDone):
                    return said
                if isinstance(said, ChildSpent):
                    self.calls.append(said)
                    continue
                reply = await self._carry_out(said)
                child.stdin.write(reply.model_dump_json(exclude_none=True).encode() + b"\n")
                await child.stdin.drain()
            return None
        except (ValueError, ConnectionError) as exc:  # a garbled line, a line past the cap
            self.stderr.append(f"\n[bridge] {type(exc).__name__}: {exc}".encode())
            return None
        finally:
            if child.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
            await asyncio.shield(child.wait())
            with contextlib.suppress(Exception):
                await asyncio.wait_for(draining, EXIT_GRACE_S)

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(4096):
            self.stderr.append(chunk)
            self.stderr_bytes += len(chunk)
            while self.stderr_bytes - len(self.stderr[0]) > STDERR_KEEP:
                self.stderr_bytes -= len(self.stderr.popleft())

    async def _carry_out(self, request: ChildRequest) -> ParentReply:
        began = time.monotonic()
        left = max(1.0, self.deadline - began)
        do = {"exec": self._exec, "upload": self._upload, "download": self._download}
        reply, shown = await do[request.op](request, left)
        ms = int((time.monotonic() - began) * 1000)
        await self._record(request, reply.exit_code or 0, shown, ms)
        return reply

    async def _exec(self, request: ChildRequest, left: float) -> tuple[ParentReply, str]:
        box = self.box
        argv, env, stdin = (
            ["bash", "-c", request.command or ""],
            {**box.env, **(request.env or {})},
            None,
        )
        if self.installed:
            argv, env, stdin = self._relayed(request.command or "", env)
        done = await self.harbor.ctx.work.exec_in(
            box.sandbox_id,
            argv,
            stdin=stdin,
            cwd=request.cwd,
            env=env,
            timeout_s=min(request.timeout_s or left, left),
            network=box.network,
        )
        stderr = self._spent_lines(done.stderr) if self.installed else done.stderr
        # What ``timeout`` returns: Harbor's agents read it as a command that ran too long.
        code = 124 if done.timed_out else done.exit_code
        reply = ParentReply(id=request.id, exit_code=code, stdout=done.stdout, stderr=stderr)
        errors = f"\n[stderr]\n{stderr}" if stderr else ""
        return reply, f"$ {request.command}\n{done.stdout}{errors}"

    def _relayed(self, command: str, env: dict[str, str]) -> tuple[list[str], dict[str, str], str]:
        """The command under the driver's relay, which leads its model calls to the proxy."""
        model = self.harbor.model
        config = {
            "exec": command,
            "index": self.ref.index,
            "trial": self.ref.trial,
            "mark": self.mark,
        }
        if self.relay_port is not None:
            config["relay_port"] = self.relay_port
        routed = {
            **env,
            # The sandbox routes this one address to the proxy; the relay hands it on.
            "BW_MODEL_PROXY_URL": model.proxy_url,
            "BW_MODEL_PROXY_KEY": model.proxy_key,
            "BW_MODEL_MODEL": model.model_id,
        }
        return [DRIVER_PYTHON, "-I", "-c", driver_source()], routed, canonical_json(config)

    def _spent_lines(self, stderr: str) -> str:
        """The command's stderr without the relay's lines, each counted as a call."""
        kept = []
        for line in stderr.splitlines(keepends=True):
            if not line.startswith(self.mark + " "):
                kept.append(line)
                continue
            with contextlib.suppress(ValueError):
                self.calls.append(ChildSpent.model_validate_json(line[len(self.mark) + 1 :]))
        return "".join(kept)

    async def _upload(self, request: ChildRequest, left: float) -> tuple[ParentReply, str]:
        content = request.content_b64 or ""
        size = len(base64.b64decode(content, validate=True))
        done = await self._file_command(UPLOAD_SCRIPT, request, left, stdin=content)
        reply = ParentReply(id=request.id, exit_code=done.exit_code)
        if done.exit_code != 0:
            reply.error = done.stderr.strip()[-300:] or "upload failed"
        return reply, f"upload {request.path} ({size} bytes)"

    async def _download(self, request: ChildRequest, left: float) -> tuple[ParentReply, str]:
        done = await self._file_command(DOWNLOAD_SCRIPT, request, left)
        reply = ParentReply(id=request.id, exit_code=done.exit_code)
        if done.exit_code == 0:
            reply.content_b64 = done.stdout.strip()
        else:
            reply.error = done.stderr.strip()[-300:] or "download failed"
            reply.errno = errno.ENOENT if "No such file" in done.stderr else errno.EIO
        return reply, f"download {request.path}" + (f": {reply.error}" if reply.error else "")

    async def _file_command(
        self, script: str, request: ChildRequest, left: float, stdin: str | None = None
    ) -> SandboxExecFinished:
        return await self.harbor.ctx.work.exec_in(
            self.box.sandbox_id,
            ["sh", "-c", script, "sh", request.path or ""],
            stdin=stdin,
            env=dict(self.box.env),
            timeout_s=min(FILE_TIMEOUT_S, left),
            network=False,
        )

    async def _record(self, request: ChildRequest, code: int, shown: str, ms: int) -> None:
        text, cut, chars = cap_text(shown)
        ref = self.ref
        await self.harbor.trajectory.record(
            AgentToolResult(
                task_id=ref.task_id,
                index=ref.index,
                trial=ref.trial,
                attempt=ref.attempt,
                turn=0,
                call_id=f"{request.op}-{request.id}",
                name=request.op,
                exit_code=code,
                is_error=code != 0,
                output=text,
                truncated=cut,
                output_chars=chars,
                duration_ms=ms,
            )
        )


def _child_env() -> dict[str, str]:
    """What the child inherits: enough to run Python, nothing else of ours."""
    kept = {k: os.environ[k] for k in ("PATH", "PYTHONPATH", "HOME", "LANG") if k in os.environ}
    return {**kept, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
