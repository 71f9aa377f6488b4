"""Proxy keys: per run, hashed at rest, revocable."""

import json
import uuid
from pathlib import Path

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent

from benchwright_proxy.application import ProxyApplication
from benchwright_proxy.domain import (
    EGRESS_PREFIX,
    InvalidProxyKeyError,
    ModelBinding,
    new_key,
    parse_key,
)
from benchwright_shared.contracts import SutRef


def test_a_key_names_its_run_and_opens_only_its_binding() -> None:
    run_id = str(uuid.uuid4())
    key, key_hash = new_key(run_id)
    assert key.startswith("bw_proxy_") and key_hash not in key
    parsed_run, secret = parse_key(key)
    assert parsed_run == run_id
    binding = ModelBinding(run_id, "acct", {"model": "m", "provider": "local"}, key_hash, "local/m")
    assert binding.accepts(secret)
    assert not binding.accepts(secret + "x")
    binding.detach()
    assert not binding.accepts(secret)


def test_a_repeated_attach_replaces_the_key() -> None:
    run_id = str(uuid.uuid4())
    first, first_hash = new_key(run_id)
    binding = ModelBinding(run_id, "acct", {}, first_hash, "local/m")
    second, second_hash = new_key(run_id)
    binding.issue_key(second_hash)
    assert not binding.accepts(parse_key(first)[1])
    assert binding.accepts(parse_key(second)[1])


def test_the_egress_key_opens_the_injector_only_and_goes_with_the_model_key() -> None:
    app = ProxyApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run_id = str(uuid.uuid4())
    sut = SutRef(model="m", provider="openai_compatible", api_base="http://model.invalid")
    binding, model_key = app.attach(run_id, "acct", sut)
    egress = binding.egress_key
    assert egress.startswith(EGRESS_PREFIX) and binding.key_hash not in egress
    assert model_key.rsplit(".", 1)[1] not in egress
    assert app.authenticate_egress(egress).run_id == run_id
    assert app.authenticate(model_key).run_id == run_id
    with pytest.raises(InvalidProxyKeyError):
        app.authenticate(egress)
    with pytest.raises(InvalidProxyKeyError):
        app.authenticate_egress(model_key)
    # A new attach issues a new key, and with it a new egress key.
    again, _ = app.attach(run_id, "acct", sut)
    assert again.egress_key != egress
    with pytest.raises(InvalidProxyKeyError):
        app.authenticate_egress(egress)
    app.detach(run_id)
    with pytest.raises(InvalidProxyKeyError):
        app.authenticate_egress(again.egress_key)


@pytest.mark.parametrize("bad", ["sk-real-key", "bw_proxy_nodot", "bw_proxy_zz.secret", ""])
def test_malformed_keys_are_refused(bad: str) -> None:
    with pytest.raises(InvalidProxyKeyError):
        parse_key(bad)


def test_a_version_1_snapshot_of_a_binding_loads_with_its_later_terms_unset() -> None:
    """``snapshots/binding_v1.json``: a binding with ceilings set, snapshotted by the
    code of its ``made_by`` commit (before cache, telemetry and pinned versions were
    attributes of every binding)."""
    stored = json.loads((Path(__file__).parent / "snapshots" / "binding_v1.json").read_text())
    assert "class_version" not in stored["state"]["state"]
    env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "IS_SNAPSHOTTING_ENABLED": "y"}
    app: Application[uuid.UUID] = Application(env=env)
    binding_id = uuid.UUID(stored["originator_id"])
    app.snapshots.recorder.insert_events(  # type: ignore[union-attr]
        [
            StoredEvent(
                originator_id=binding_id,
                originator_version=stored["originator_version"],
                topic=stored["topic"],
                state=json.dumps(stored["state"]).encode(),
            )
        ]
    )
    binding: ModelBinding = app.repository.get(binding_id)
    assert binding.ceilings == (5000, None) and binding.task_bounds == (None, None)
    assert binding.cache_setting is None and binding.telemetry_setting is None
    assert binding.pinned_versions is None
    assert binding.accepts(parse_key(stored["key"])[1])
    binding.choose_cache({"mode": "read", "ttl": 60})
    assert binding.cache_setting == {"mode": "read", "ttl": 60}


def test_a_binding_has_every_term_from_attach_on() -> None:
    binding = ModelBinding(str(uuid.uuid4()), "acct", {}, "hash", "local/m")
    assert binding.ceilings == (None, None) and binding.task_bounds == (None, None)
    assert binding.cache_setting is None and binding.telemetry_setting is None
    assert binding.pinned_versions is None
