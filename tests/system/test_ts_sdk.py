"""The TypeScript SDK (``sdk-ts``): its generated types match the gateway's OpenAPI, it
type-checks strictly and builds, and it drives the embedded platform end to end
(launch, stream, wait, page, export, typed errors) from Node.

Node and npm are needed; the tests skip without them, except in CI, where they fail.
"""

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.system.test_pinned_run import gsm8k_rows

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk-ts"
OPENAPI_JSON = SDK / "openapi.json"
SCHEMA_TYPES = SDK / "src" / "schema.d.ts"
REGENERATE = "cd sdk-ts && npm run generate (then commit openapi.json and src/schema.d.ts)"
NPM_TIMEOUT_S = 600.0
# pytest's workers share sdk-ts (node_modules, build, dist): one npm at a time there.
NPM_LOCK = SDK / ".npm.lock"


def npm() -> str:
    """The npm beside a Node new enough for the SDK; a skip without one, a failure in CI."""
    node, found = shutil.which("node"), shutil.which("npm")
    if node and found:
        major = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
        if int(major.stdout.strip().lstrip("v").split(".")[0]) >= 20:
            return found
    if os.environ.get("CI"):
        pytest.fail("node >= 20 and npm are missing on a CI machine: the TypeScript SDK needs them")
    pytest.skip("node >= 20 and npm are not installed (the TypeScript SDK's tests need them)")


@contextlib.contextmanager
def npm_turn() -> Iterator[None]:
    with NPM_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.asynccontextmanager
async def npm_turn_async() -> AsyncIterator[None]:
    """``npm_turn`` without blocking the event loop the platform answers from."""
    with NPM_LOCK.open("w") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        yield


def run_npm(*args: str) -> str:
    with npm_turn():
        return run_npm_now(*args)


def run_npm_now(*args: str) -> str:
    done = subprocess.run(
        [npm(), *args],
        cwd=SDK,
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"npm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """``npm ci`` once per lockfile: reinstalled only when the lockfile is newer."""
    installed = SDK / "node_modules" / ".package-lock.json"
    lockfile = SDK / "package-lock.json"
    with npm_turn():
        if not installed.exists() or installed.stat().st_mtime < lockfile.stat().st_mtime:
            run_npm_now("ci", "--no-audit", "--no-fund")
    return installed.parent


def test_committed_openapi_is_the_gateways() -> None:
    dumped = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "openapi.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert dumped == OPENAPI_JSON.read_text(encoding="utf-8"), (
        f"sdk-ts/openapi.json is stale: {REGENERATE}"
    )


def test_committed_schema_types_are_generated_from_it(node_modules: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "schema.d.ts"
    run_npm("exec", "--", "openapi-typescript", str(OPENAPI_JSON), "--output", str(fresh))
    assert fresh.read_text(encoding="utf-8") == SCHEMA_TYPES.read_text(encoding="utf-8"), (
        f"sdk-ts/src/schema.d.ts is stale: {REGENERATE}"
    )


def test_the_sdk_type_checks_strictly_and_builds(node_modules: Path) -> None:
    run_npm("run", "typecheck")
    run_npm("run", "build")
    assert (SDK / "dist" / "index.js").exists() and (SDK / "dist" / "schema.d.ts").exists()


@pytest.mark.connected
@pytest.mark.embedded_only
async def test_the_sdk_against_the_gateway(platform: Platform, node_modules: Path) -> None:
    assert platform.client is not None
    model = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20], correct_every=2)).start()
    env = {
        **os.environ,
        "BW_PAT": platform.token,
        "BW_BASE_URL": str(platform.client.base_url).rstrip("/"),
        "BW_TEST_MODEL_BASE_URL": model.base_url,
    }
    try:
        async with npm_turn_async():
            # The gateway answers from this event loop: wait for Node without blocking it.
            process = await asyncio.create_subprocess_exec(
                npm(),
                "test",
                cwd=SDK,
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            try:
                output, _ = await asyncio.wait_for(process.communicate(), NPM_TIMEOUT_S)
            except TimeoutError:
                process.kill()
                await process.wait()
                raise
    finally:
        model.stop()
    report = output.decode(errors="replace")
    assert process.returncode == 0, report
    # Both the offline tests and the live ones ran; none was skipped.
    assert re.search(r" fail 0$", report, re.M), report
    assert re.search(r" skipped 0$", report, re.M), report
