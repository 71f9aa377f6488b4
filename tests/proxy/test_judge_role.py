"""The judge role at the proxy (decision 0061): a run attached with judges gets a judge
key beside its model key. The judge key reaches only the judges (the one a call names
by model id; the first when it names none), the model key only the model under test;
judge calls are metered under ``role="judge"``, count toward the task's ceilings, and
are always cached (a second grading of the same answer asks no one). Detaching the
run revokes both keys; a run without judges has no judge key at all."""

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright_proxy.app import ProxyService, build
from benchwright_proxy.domain import JUDGE_PREFIX
from benchwright_shared.contracts import DetachModel, SutRef
from benchwright_shared.contracts.queries import CheckProviderKeys
from benchwright_shared.settings import Settings
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture
def servers() -> Iterator[dict[str, FakeOpenAIServer]]:
    found = {
        "model": FakeOpenAIServer(lambda prompt: "the model's answer").start(),
        "strict": FakeOpenAIServer(lambda prompt: "GRADE: I").start(),
        "lenient": FakeOpenAIServer(lambda prompt: "GRADE: C").start(),
    }
    yield found
    for server in found.values():
        server.stop()


def sut(name: str, server: FakeOpenAIServer) -> SutRef:
    return SutRef(model=name, provider="openai_compatible", api_base=server.base_url)


async def started(tmp_path: Path) -> tuple[ProxyService, str]:
    settings = Settings(data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None)
    service = build(settings)
    return service, await service.runtime.serve_http()


async def ask(
    url: str, key: str, prompt: str, model: str | None = None, task: int = 0
) -> httpx.Response:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}]}
    if model is not None:
        body["model"] = model
    headers = {
        "Authorization": f"Bearer {key}",
        "X-Benchwright-Task": str(task),
        "X-Benchwright-Trial": "0",
    }
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(f"{url}/v1/chat/completions", json=body, headers=headers)


def text(answer: httpx.Response) -> str:
    assert answer.status_code == 200, answer.text
    return str(answer.json()["choices"][0]["message"]["content"])


async def test_the_judge_key_reaches_the_judges_and_is_metered_apart(
    tmp_path: Path, servers: dict[str, FakeOpenAIServer]
) -> None:
    service, url = await started(tmp_path)
    runtime = service.runtime
    run_id = str(uuid.uuid4())
    judges = [sut("strict", servers["strict"]), sut("lenient", servers["lenient"])]
    try:
        binding, key = await runtime.bind(
            run_id, "acct", sut("m", servers["model"]), "attach-1", judges=judges
        )
        judge_key = binding.judge_key
        assert judge_key is not None and judge_key.startswith(JUDGE_PREFIX)
        assert judge_key != key

        # The model key reaches the model whatever the body names; the judge key the
        # judge it names, the first when it names none.
        assert text(await ask(url, key, "q", model="openai_compatible/lenient")) == (
            "the model's answer"
        )
        assert text(await ask(url, judge_key, "grade a")) == "GRADE: I"
        assert text(await ask(url, judge_key, "grade a", model="lenient")) == "GRADE: C"
        named = await ask(url, judge_key, "grade a", model="openai_compatible/strict")
        assert text(named) == "GRADE: I"
        # Asked again: the judge's kept answer, free, and nobody asked twice.
        assert named.headers["x-benchwright-cache"] == "hit"
        assert servers["strict"].state["calls"] == 1
        assert servers["lenient"].state["calls"] == 1

        stranger = await ask(url, judge_key, "grade a", model="m")
        assert stranger.status_code == 400
        assert "not one of this run's judges" in stranger.json()["error"]["message"]

        usage = runtime.meter.drain()
        by_role: dict[str, int] = {}
        for window in usage:
            by_role[window.role] = by_role.get(window.role, 0) + window.calls
        assert by_role == {"model": 1, "judge": 3}
        judged = {u.model_id: u.calls for u in usage if u.role == "judge"}
        assert judged == {"openai_compatible/strict": 2, "openai_compatible/lenient": 1}
        assert sum(u.cached_calls for u in usage if u.role == "judge") == 1

        # A detach revokes the judge key with the model key.
        await runtime.detach(DetachModel(command_id="d", run_id=run_id))
        assert (await ask(url, judge_key, "grade b")).status_code == 401
        assert (await ask(url, key, "q")).status_code == 401
    finally:
        await service.stop()


async def test_a_run_without_judges_has_no_judge_key_and_a_forged_one_is_refused(
    tmp_path: Path, servers: dict[str, FakeOpenAIServer]
) -> None:
    service, url = await started(tmp_path)
    try:
        run_id = str(uuid.uuid4())
        binding, _ = await service.runtime.bind(run_id, "acct", sut("m", servers["model"]))
        assert binding.judge_key is None
        forged = f"{JUDGE_PREFIX}{uuid.UUID(run_id).hex}.{'0' * 64}"
        answer = await ask(url, forged, "grade")
        assert answer.status_code == 401
        assert servers["model"].state["calls"] == 0
    finally:
        await service.stop()


async def test_a_judge_needing_a_key_nobody_holds_is_named(
    tmp_path: Path, servers: dict[str, FakeOpenAIServer]
) -> None:
    service, _ = await started(tmp_path)
    try:
        query = CheckProviderKeys(
            account="acct",
            suts=[
                sut("own", servers["strict"]),
                SutRef(model="meta-llama/llama-3-70b", provider="together"),
                SutRef(model="x", provider="nobody"),
            ],
        )
        answer = await service.runtime.check_keys(query)
        assert sorted(answer.missing) == [1, 2]
        assert "no together key" in answer.missing[1]
        assert "unknown provider" in answer.missing[2]
    finally:
        await service.stop()


def test_the_frozen_config_names_the_judges_and_is_unchanged_without_them() -> None:
    import yaml

    from benchwright_proxy.application import litellm_config_yaml

    model = SutRef(model="m", provider="openrouter")
    judge = SutRef(model="g", provider="openai_compatible", api_base="http://127.0.0.1:9/v1")
    plain = litellm_config_yaml(model)
    assert litellm_config_yaml(model, []) == plain
    judged = yaml.safe_load(litellm_config_yaml(model, [judge]))["model_list"]
    assert [m["model_name"] for m in judged] == ["openrouter/m", "openai_compatible/g"]
    assert judged[1]["model_info"] == {"role": "judge"}
    assert yaml.safe_load(plain)["model_list"] == judged[:1]
