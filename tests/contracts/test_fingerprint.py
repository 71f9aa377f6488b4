"""Fingerprints: only load-bearing artifact fields count."""

import pytest

from benchwright_shared.fingerprint import run_fingerprint
from benchwright_shared.hashing import canonical_json


def artifacts(port: int, model: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("RunLaunched", {"anything": 1}),
        (
            "DatasetTasksArtifact",
            {
                "benchmark_id": "bm",
                "subset_id": "s",
                "content_sha256": "c",
                "selection": {"limit": 5},
                "total_tasks": 9,
            },
        ),
        (
            "ModelProxyArtifact",
            {
                "model_id": model,
                "litellm_config_yaml": "y",
                "proxy_url": f"http://127.0.0.1:{port}",
            },
        ),
        ("ReportFile", {"content": "noise"}),
    ]


def test_noise_does_not_change_the_fingerprint_but_the_model_does() -> None:
    a, records = run_fingerprint(artifacts(1000, "m1"))
    b, _ = run_fingerprint(artifacts(2000, "m1"))
    c, _ = run_fingerprint(artifacts(1000, "m2"))
    assert a == b != c
    assert len(a) == 12
    assert len(records) == 2


def test_an_artifact_without_a_rule_is_an_error() -> None:
    with pytest.raises(KeyError):
        run_fingerprint([("MysteryArtifact", {})])


def test_canonical_json_is_order_independent() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'
