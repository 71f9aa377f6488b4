"""The Harbor bridge's child process: one of Harbor's agents at one attempt.

Run as ``python -m benchwright_orchestrator.agents.harbor_child`` by the orchestrator
(``phases.harbor_bridge``), which alone imports nothing of Harbor: Harbor's imports,
its logging and any crash of its agent stay in this process. The agent's environment
is ``RelayEnvironment``, a Harbor environment provider whose every exec, upload and
download is a request to the orchestrator (``harbor_wire``), carried out in the
attempt's task sandbox; it starts and stops nothing, the orchestrator owns the sandbox.

Protocol lines go out on a private copy of stdout; fd 1 is pointed at stderr first,
so nothing Harbor or LiteLLM prints can corrupt them.

Model calls are metered where they are answered: LiteLLM's HTTP client
(``litellm.aclient_session``) is one of ours whose response hook reads what the proxy
stamped on each answer and reports it at once (``ChildSpent``), before LiteLLM has
parsed it. Nothing depends on LiteLLM's logging callbacks (queued, run later, dropped
when their queue overflows) or on Harbor's own cost estimate.
"""

import asyncio
import base64
import contextlib
import ctypes
import errno
import os
import signal
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import IO, Any

import httpx

# Before Harbor is imported: no telemetry, no fetch of LiteLLM's price list.
os.environ["HARBOR_TELEMETRY"] = "0"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import litellm
from harbor.agents.factory import AgentFactory
from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.agent.name import AgentName
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths

from benchwright_orchestrator.agents.harbor_wire import (
    COST_STAMPS,
    BridgeConfig,
    ChildDone,
    ChildRequest,
    ChildSpent,
    ParentReply,
)

# A reply line may carry a file of up to the sandbox's output cap, base64-encoded.
LINE_LIMIT = 8 * 1024 * 1024
PR_SET_PDEATHSIG = 1
# Under Codex's home directory's parent, which the bridge keeps across the attempt.
CODEX_SECRETS_DIR = "/installed-agent/codex-secrets"


class RelayEnvironment(BaseEnvironment):  # type: ignore[misc]
    """Harbor's environment, each operation relayed to the orchestrator."""

    def __init__(self, relay: "Relay", workdir: str, **kwargs: Any) -> None:
        self._relay = relay
        self._workdir = workdir
        super().__init__(**kwargs)

    @staticmethod
    def type() -> str:
        return "benchwright"

    def _validate_definition(self) -> None:
        """The orchestrator laid the sandbox out from the task's environment already."""

    async def start(self, force_build: bool) -> None:
        """The sandbox exists before the agent does."""

    async def stop(self, delete: bool) -> None:
        """The orchestrator kills the sandbox after the verifier."""

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        # ``user`` is not honoured: every command runs as the sandbox's one user.
        reply = await self._relay.ask(
            op="exec",
            command=command,
            cwd=cwd or self._workdir,
            env=self._merge_env(env),
            timeout_s=float(timeout_sec) if timeout_sec else None,
        )
        if reply.error is not None:
            raise RuntimeError(reply.error)
        return ExecResult(stdout=reply.stdout, stderr=reply.stderr, return_code=reply.exit_code)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        raw = await asyncio.to_thread(Path(source_path).read_bytes)
        content = base64.b64encode(raw).decode()
        reply = await self._relay.ask(op="upload", path=target_path, content_b64=content)
        if reply.error is not None:
            raise OSError(reply.errno or errno.EIO, reply.error, target_path)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        root = Path(source_dir)
        for path in await asyncio.to_thread(_files_under, root):
            await self.upload_file(path, f"{target_dir.rstrip('/')}/{path.relative_to(root)}")

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        reply = await self._relay.ask(op="download", path=source_path)
        if reply.error is not None or reply.content_b64 is None:
            raise OSError(reply.errno or errno.EIO, reply.error or "no content", source_path)
        await asyncio.to_thread(_write, Path(target_path), base64.b64decode(reply.content_b64))

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        listed = await self.exec(f"find {_quoted(source_dir)} -type f")
        if listed.return_code != 0:
            raise OSError(errno.ENOENT, (listed.stderr or "").strip(), source_dir)
        base = source_dir.rstrip("/") + "/"
        for line in (listed.stdout or "").splitlines():
            if line.startswith(base):
                await self.download_file(line, Path(target_dir) / line.removeprefix(base))


def _files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _write(target: Path, content: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)


def _quoted(path: str) -> str:
    return "'" + path.replace("'", "'\\''") + "'"


class Relay:
    """Requests out on the protocol stream, replies in on stdin, matched by id."""

    def __init__(self, out: IO[str], replies: asyncio.StreamReader) -> None:
        self._out = out
        self._replies = replies
        self._waiting: dict[int, asyncio.Future[ParentReply]] = {}
        self._next = 0

    def send(self, line: str) -> None:
        self._out.write(line + "\n")
        self._out.flush()

    async def ask(self, **fields: Any) -> ParentReply:
        self._next += 1
        request = ChildRequest(id=self._next, **fields)
        future: asyncio.Future[ParentReply] = asyncio.get_running_loop().create_future()
        self._waiting[request.id] = future
        self.send(request.model_dump_json(exclude_none=True))
        return await future

    async def read_replies(self) -> None:
        while line := await self._replies.readline():
            reply = ParentReply.model_validate_json(line)
            future = self._waiting.pop(reply.id, None)
            if future is not None and not future.done():
                future.set_result(reply)
        for future in self._waiting.values():  # the orchestrator went away
            future.set_exception(ConnectionError("the orchestrator closed the bridge"))


def _stamped(headers: httpx.Headers) -> ChildSpent | None:
    """What the proxy stamped on an answer; None for one it did not meter (an error)."""
    found = {field: headers.get(header, "") for header, field in COST_STAMPS.items()}
    if not found["cost_micros"].isdigit():
        return None
    return ChildSpent.model_validate({f: int(v) if v.isdigit() else 0 for f, v in found.items()})


def meter_model_calls(relay: Relay) -> httpx.AsyncClient:
    """LiteLLM's HTTP client, reporting each metered answer as its headers arrive."""

    async def report(response: httpx.Response) -> None:
        spent = _stamped(response.headers)
        if spent is not None:
            relay.send(spent.model_dump_json())

    client = httpx.AsyncClient(event_hooks={"response": [report]})
    litellm.aclient_session = client
    return client


def _agent_kwargs(config: BridgeConfig, task_dir: Path, paths: TrialPaths) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(config.agent_kwargs)
    if config.agent == AgentName.ORACLE.value:
        kwargs |= {"task_dir": task_dir, "trial_paths": paths}
        kwargs["agent_timeout_sec"] = config.timeout_s
    if config.model is not None and config.agent == AgentName.TERMINUS_2.value:
        kwargs["api_base"] = config.model.api_base
        # The proxy meters and caps each call against its task and trial.
        calls = dict(kwargs.get("llm_call_kwargs") or {})
        calls["extra_headers"] = {**calls.get("extra_headers", {}), **config.model.headers}
        kwargs["llm_call_kwargs"] = calls
        # asciinema is absent offline and its recording is not kept.
        kwargs.setdefault("record_terminal_session", False)
    if config.installed:
        # The CLI is in the sandbox already: Harbor's install would fetch it from the network.
        kwargs["skip_install"] = True
    return kwargs


async def run(config: BridgeConfig, relay: Relay, scratch: Path) -> ChildDone:
    task_dir = scratch / "task"
    for relative, text in config.task_files.items():
        target = task_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (task_dir / "environment").mkdir(parents=True, exist_ok=True)
    # Harbor's task loader wants a verifier; the agent never gets the real one.
    stub = task_dir / "tests" / "test.sh"
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text("#!/bin/bash\n# the verifier runs in the orchestrator, not here\n")
    paths = TrialPaths(scratch / "trial")
    paths.mkdir()
    environment = RelayEnvironment(
        relay,
        config.workdir,
        environment_dir=task_dir / "environment",
        environment_name=config.task_name,
        session_id=f"{config.task_name}__benchwright",
        trial_paths=paths,
        task_env_config=EnvironmentConfig(),
    )
    agent = AgentFactory.create_agent_from_name(
        AgentName(config.agent),
        logs_dir=paths.agent_dir,
        model_name=config.model.name if config.model else None,
        **_agent_kwargs(config, task_dir, paths),
    )
    if config.agent == AgentName.CODEX.value and hasattr(agent, "_REMOTE_CODEX_SECRETS_DIR"):
        # Harbor writes Codex's key file under /tmp in one command and reads it in the
        # next; a sandbox may give each command a /tmp of its own (the local backend's).
        agent._REMOTE_CODEX_SECRETS_DIR = PurePosixPath(CODEX_SECRETS_DIR)
    await agent.setup(environment)
    # What the agent's context counts is Harbor's estimate; the proxy's stamps are the
    # platform's figure, reported call by call.
    await agent.run(config.instruction, environment, AgentContext())
    return ChildDone()


def _die_with_the_orchestrator() -> None:
    """A SIGKILL when the orchestrator dies (kill -9 included): no orphaned agent."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


async def main() -> int:
    _die_with_the_orchestrator()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever else writes to stdout lands on stderr
    loop = asyncio.get_running_loop()
    replies = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(replies), sys.stdin)
    config = BridgeConfig.model_validate_json(await replies.readline())
    if config.model is not None:
        # LiteLLM's OpenAI client reads its key here; only the proxy's key is ever set.
        os.environ["OPENAI_API_KEY"] = config.model.api_key
        if config.agent == AgentName.CODEX.value:
            # Harbor writes it into Codex's config: the address of the sandbox's relay.
            os.environ["OPENAI_BASE_URL"] = config.model.api_base
        elif config.installed:
            # What Harbor hands an installed agent's CLI: the proxy's key and address.
            os.environ["ANTHROPIC_API_KEY"] = config.model.api_key
            os.environ["ANTHROPIC_BASE_URL"] = config.model.api_base
    relay = Relay(out, replies)
    reading = asyncio.create_task(relay.read_replies())
    client = meter_model_calls(relay) if config.model is not None else None
    with tempfile.TemporaryDirectory(prefix="bw-harbor-") as scratch:
        try:
            done = await run(config, relay, Path(scratch))
        except Exception as exc:  # the agent's failure, reported rather than a bare exit
            done = ChildDone(error=f"{type(exc).__name__}: {exc}"[:4000])
        finally:
            if client is not None:
                await client.aclose()
    relay.send(done.model_dump_json())
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading
    return 0 if done.error is None else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
