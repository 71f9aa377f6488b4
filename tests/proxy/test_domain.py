"""Proxy keys: per run, hashed at rest, revocable."""

import uuid

import pytest

from benchwright_proxy.domain import InvalidProxyKeyError, ModelBinding, new_key, parse_key


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


@pytest.mark.parametrize("bad", ["sk-real-key", "bw_proxy_nodot", "bw_proxy_zz.secret", ""])
def test_malformed_keys_are_refused(bad: str) -> None:
    with pytest.raises(InvalidProxyKeyError):
        parse_key(bad)
