"""Webhook rules without I/O: event types, URLs, signing, backoff, attempts, sealing."""

import hashlib
import hmac
import json
import stat
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from benchwright.resources.webhooks import WebhookSignatureError, construct_event
from benchwright_gateway.webhooks.crypto import KEY_FILE, SealError, WebhooksSealer
from benchwright_gateway.webhooks.domain import (
    FAILED,
    PENDING,
    SUCCEEDED,
    Delivery,
    Endpoint,
    RetryPolicy,
    delivery_id_for,
    event_id_for,
    event_type_for,
    sign,
    signature_header,
    url_problem,
)
from benchwright_shared.refusal import Refused

SECRET = "whsec_test-secret-0123456789"


def test_a_settled_run_raises_one_event_type() -> None:
    assert event_type_for("ok", None) == "run.finished"
    assert event_type_for("error", "runtime_broken") == "run.failed"
    assert event_type_for("error", "interrupted") == "run.failed"
    # An operator's kill and a breached ceiling both finish with error_type "halted".
    assert event_type_for("error", "halted") == "run.halted"


@pytest.mark.parametrize(
    ("url", "insecure", "ok"),
    [
        ("https://ci.example.com/hooks/bw", False, True),
        ("https://ci.example.com:8443/hooks?x=1", False, True),
        ("http://ci.example.com/hooks", False, False),
        ("http://ci.example.com/hooks", True, False),  # plain http only to loopback
        ("http://127.0.0.1:9000/hooks", False, False),
        ("http://127.0.0.1:9000/hooks", True, True),
        ("http://localhost/hooks", True, True),
        ("http://[::1]:8080/hooks", True, True),
        ("https://localhost/hooks", False, False),
        ("https://10.1.2.3/hooks", False, False),
        ("https://169.254.169.254/latest/meta-data", False, False),
        ("https://10.1.2.3/hooks", True, True),
        ("https://user:pw@ci.example.com/hooks", False, False),
        ("https://ci.example.com/hooks#frag", False, False),
        ("ftp://ci.example.com/hooks", False, False),
        ("/relative/path", False, False),
        ("https://ci.example.com:99999/", False, False),
        ("https://ci.example.com/" + "x" * 2100, False, False),
    ],
)
def test_which_urls_can_be_endpoints(url: str, insecure: bool, ok: bool) -> None:
    problem = url_problem(url, allow_insecure=insecure)
    assert (problem is None) == ok, problem


def spec_verify(secret: str, body: bytes, header: str) -> bool:
    """The receiver the developer guide (section 11.2) shows, verbatim in spirit."""
    parts = dict(kv.split("=", 1) for kv in header.split(","))
    expected = hmac.new(
        secret.encode(), f"{parts['t']}.{body.decode()}".encode(), hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


def test_the_signature_is_what_the_guide_verifies_and_the_sdk_accepts() -> None:
    body = json.dumps({"id": "evt_1", "type": "run.finished", "data": {"id": "r"}}).encode()
    now = int(time.time())
    header = signature_header([SECRET], now, body)
    assert header == f"t={now},v1={sign(SECRET, now, body)}"
    assert spec_verify(SECRET, body, header)
    event = construct_event(body, header, SECRET)
    assert event.id == "evt_1" and event.type == "run.finished" and event.data.id == "r"
    # str payloads work too
    assert construct_event(body.decode(), header, SECRET).id == "evt_1"


def test_construct_event_refuses_what_does_not_hold() -> None:
    body = b'{"id":"evt_1","object":"event","type":"run.finished","data":{}}'
    now = int(time.time())
    header = signature_header([SECRET], now, body)
    with pytest.raises(WebhookSignatureError, match="no signature matches"):
        construct_event(body + b" ", header, SECRET)
    with pytest.raises(WebhookSignatureError, match="no signature matches"):
        construct_event(body, header, "whsec_other")
    stale = signature_header([SECRET], now - 301, body)
    with pytest.raises(WebhookSignatureError, match="from now"):
        construct_event(body, stale, SECRET)
    assert construct_event(body, stale, SECRET, tolerance=None).id == "evt_1"
    for bad in ("", "t=1", f"v1={sign(SECRET, now, body)}", "t=x,v1=00"):
        with pytest.raises(WebhookSignatureError):
            construct_event(body, bad, SECRET)
    not_json = b"not json"
    with pytest.raises(WebhookSignatureError, match="not a webhook event"):
        construct_event(not_json, signature_header([SECRET], now, not_json), SECRET)
    # It is a ValueError too, for receivers that catch those.
    assert issubclass(WebhookSignatureError, ValueError)


def test_during_a_rotation_either_secret_verifies() -> None:
    body = b'{"id":"evt_2","type":"run.failed","data":{}}'
    now = int(time.time())
    header = signature_header(["whsec_new", "whsec_old"], now, body)
    assert header.count("v1=") == 2
    assert construct_event(body, header, "whsec_new").id == "evt_2"
    assert construct_event(body, header, "whsec_old").id == "evt_2"


def test_ids_are_stable_per_run_event_and_endpoint() -> None:
    evt = event_id_for("run-1", "run.finished")
    assert evt.startswith("evt_") and evt == event_id_for("run-1", "run.finished")
    assert evt != event_id_for("run-1", "run.failed")
    whd = delivery_id_for("whk_a", evt)
    assert whd.startswith("whd_") and whd == delivery_id_for("whk_a", evt)
    assert whd != delivery_id_for("whk_b", evt)


def test_backoff_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(max_attempts=12, initial_s=10, max_s=3600)
    assert [policy.delay(n) for n in range(1, 6)] == [10, 20, 40, 80, 160]
    assert policy.delay(11) == 3600
    assert policy.delay(2, jitter=1.2) == pytest.approx(24)


def delivery(now: float = 1000.0) -> Delivery:
    return Delivery("whd_1", "whk_1", "acct", "evt_1", "run.finished", "run-1", "{}", now, False)


def test_attempts_retry_with_backoff_then_give_up() -> None:
    policy = RetryPolicy(max_attempts=3, initial_s=1, max_s=10)
    d = delivery()
    assert d.claimable("w1", 1000.0)
    d.claim("w1", 1040.0)
    assert not d.claimable("w2", 1001.0)  # another worker waits for the lease
    d.finish_attempt(at=1001, status_code=500, duration_ms=5, error="HTTP 500", policy=policy)
    assert d.status == PENDING and d.next_attempt_at == 1002 and d.lease_owner == ""
    assert not d.claimable("w2", 1001.5) and d.claimable("w2", 1002)
    d.finish_attempt(at=1002, status_code=None, duration_ms=5, error="ConnectError", policy=policy)
    assert d.status == PENDING and d.next_attempt_at == 1004
    d.finish_attempt(at=1004, status_code=503, duration_ms=5, error="HTTP 503", policy=policy)
    assert d.status == FAILED and d.next_attempt_at is None
    assert [a["status_code"] for a in d.attempts] == [500, None, 503]
    assert [a["attempt"] for a in d.attempts] == [1, 2, 3]
    # A manual retry is a fresh series with the full budget.
    d.requeue(2000)
    assert d.status == PENDING and d.next_attempt_at == 2000
    d.finish_attempt(at=2000, status_code=500, duration_ms=5, error="HTTP 500", policy=policy)
    assert d.status == PENDING
    d.finish_attempt(at=2001, status_code=204, duration_ms=5, error=None, policy=policy)
    assert d.status == SUCCEEDED and d.attempts[-1]["succeeded"] is True
    with pytest.raises(Refused):
        delivery().requeue(1)  # a pending delivery is not requeued


def test_an_endpoint_hears_only_what_it_wants_after_it_was_made() -> None:
    endpoint = Endpoint("whk_1", "acct", "https://x.example/h", ["run.failed"], "", "sealed", 100.0)
    assert endpoint.wants("run.failed", 100.0)
    assert not endpoint.wants("run.failed", 99.0)  # happened before it existed
    assert not endpoint.wants("run.finished", 200.0)
    endpoint.update(
        url=endpoint.url, events=["run.failed"], description="", enabled=False, updated_at=150
    )
    assert not endpoint.wants("run.failed", 200.0)
    endpoint.update(
        url=endpoint.url, events=["run.failed"], description="", enabled=True, updated_at=160
    )
    endpoint.rotate_secret(sealed_secret="sealed2", previous_expires_at=260.0, rotated_at=200.0)
    assert endpoint.sealed_secrets(250.0) == ["sealed2", "sealed"]
    assert endpoint.sealed_secrets(260.0) == ["sealed2"]
    endpoint.rotate_secret(sealed_secret="sealed3", previous_expires_at=300.0, rotated_at=300.0)
    assert endpoint.sealed_secrets(300.0) == ["sealed3"] and endpoint.previous_sealed_secret is None
    endpoint.remove(removed_at=400)
    assert not endpoint.wants("run.failed", 500.0)


def test_the_sealer_keeps_its_key_private_and_refuses_a_stranger(tmp_path: Path) -> None:
    sealer = WebhooksSealer.from_config(None, tmp_path)
    key_file = tmp_path / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    sealed = sealer.seal(SECRET)
    assert SECRET not in sealed and sealer.open(sealed) == SECRET
    # The same directory gives the same key; another key opens nothing.
    assert WebhooksSealer.from_config(None, tmp_path).open(sealed) == SECRET
    with pytest.raises(SealError):
        WebhooksSealer(Fernet.generate_key()).open(sealed)
    configured = Fernet.generate_key().decode()
    assert (
        WebhooksSealer.from_config(configured, tmp_path / "unused").open(
            WebhooksSealer(configured.encode()).seal("x")
        )
        == "x"
    )
    assert not (tmp_path / "unused").exists()
    assert "key" not in repr(sealer).replace("<key hidden>", "")
