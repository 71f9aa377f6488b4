"""The published OpenAPI, fuzzed against the running platform: no input it allows, nor
any it does not, gets a 5xx (issue 11)."""

import asyncio
import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from tests.conftest import Platform

pytestmark = [pytest.mark.slow, pytest.mark.connected]

# Cases per operation: enough to hit bad types, huge numbers and odd strings in every
# field, bounded so the whole API takes about a minute on two cores.
EXAMPLES = int(os.environ.get("BW_FUZZ_EXAMPLES", "15"))
# A stream stays open until its run ends: fuzzing it only measures the timeout.
SKIP = {"/v1/runs/{run_id}/stream"}


def fuzz(document: dict[str, Any], base_url: str, token: str) -> tuple[list[str], dict[int, int]]:
    schema = schemathesis.openapi.from_dict(document)
    headers = {"Authorization": f"Bearer {token}"}
    failures: list[str] = []
    statuses: dict[int, int] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path in SKIP:
            continue

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            response = case.call(base_url=base_url, headers=headers, timeout=60)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            where = f"{case.operation.method.upper()} {case.operation.path}"
            if response.status_code >= 500:
                failures.append(
                    f"{where} -> {response.status_code} "
                    f"{response.text[:200]} (path {case.path_parameters}, query {case.query}, "
                    f"body {str(case.body)[:200]})"
                )
            elif response.status_code >= 400:
                kind = response.headers.get("content-type") or [""]
                kind = kind[0] if isinstance(kind, list) else kind
                if not kind.startswith("application/problem+json"):
                    failures.append(
                        f"{where} -> {response.status_code} as {kind!r}, not a problem document"
                    )

        check()
    return failures, statuses


async def test_the_published_api_never_answers_5xx(platform: Platform) -> None:
    if platform.settings.nats_url:
        pytest.skip("fuzzed once, on the embedded platform: the load is bounded")
    client = platform.client
    assert client is not None
    document = (await client.get("/openapi.json")).json()
    base_url = str(client.base_url).rstrip("/")
    failures, statuses = await asyncio.to_thread(fuzz, document, base_url, platform.token)
    assert failures == [], "\n".join(failures[:20])
    operations = sum(len(item) for item in document["paths"].values())
    # It asked every operation, and got past validation as well as into it.
    assert sum(statuses.values()) >= 2 * operations, statuses
    assert any(200 <= code < 300 for code in statuses) and 400 in statuses, statuses
