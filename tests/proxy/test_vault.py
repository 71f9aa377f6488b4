"""The vault without the bus: sealing, versions, rules, host policy, refusals."""

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from benchwright_proxy.vault.application import VaultApplication
from benchwright_proxy.vault.crypto import KEY_FILE, VaultKeyError, VaultSealer
from benchwright_proxy.vault.domain import HostPolicy, Secret, host_matches
from benchwright_shared.contracts.vault import HostRule, PutSecret, SecretRule, UpdateHostPolicy
from benchwright_shared.refusal import Refused
from benchwright_shared.settings import Settings
from benchwright_shared.store import eventsourcing_env

VALUE = "sk-or-v1-0123456789abcdef"


def vault(tmp_path: Path) -> VaultApplication:
    settings = Settings(data_dir=tmp_path)
    sealer = VaultSealer.from_config(None, settings.service_dir("proxy"))
    return VaultApplication(sealer, env=eventsourcing_env(settings, "proxy", part="vault"))


def put(v: VaultApplication, value: str | None = VALUE, **kwargs: object) -> None:
    rules = [SecretRule(host_pattern="openrouter.ai")]
    v.put(PutSecret(account="a", name="openrouter", value=value, rules=rules, **kwargs))  # type: ignore[arg-type]


def test_values_are_sealed_at_rest_and_never_shown(tmp_path: Path) -> None:
    v = vault(tmp_path)
    put(v)
    key = tmp_path / "proxy" / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    view = v.read("a", "openrouter")[0]
    assert view.preview == "••••cdef" and VALUE not in view.model_dump_json()
    # Not in the event store either: only ciphertext went there.
    for path in (tmp_path / "proxy").iterdir():
        assert VALUE.encode() not in path.read_bytes(), path
    # Another key cannot open what the vault holds.
    sealed = v.repository.get(Secret.create_id("a", "openrouter")).versions[1]
    v.close()
    with pytest.raises(VaultKeyError):
        VaultSealer(Fernet.generate_key()).open(sealed)


def test_a_rotation_gives_new_runs_the_new_value_and_old_runs_the_old(tmp_path: Path) -> None:
    v = vault(tmp_path)
    put(v)
    pinned_before = v.current_versions("a")
    put(v, value="sk-or-v1-rotated-999999")
    assert v.current_versions("a") == {"openrouter": 2}
    (old,) = v.injections("a", "openrouter.ai", pinned_before)
    (new,) = v.injections("a", "openrouter.ai", v.current_versions("a"))
    assert old[1] == VALUE and new[1] == "sk-or-v1-rotated-999999"
    assert v.injections("a", "evil.example", v.current_versions("a")) == []
    # Another account sees none of it.
    assert v.read("b", None) == []
    with pytest.raises(Refused):
        v.read("b", "openrouter")


def test_creating_twice_is_a_conflict_and_rules_allow_their_hosts(tmp_path: Path) -> None:
    v = vault(tmp_path)
    put(v, create_only=True)
    with pytest.raises(Refused) as caught:
        put(v, create_only=True)
    assert caught.value.status == 409
    policy = v.host_policy("a")
    assert [(r.pattern, r.action) for r in policy.rules] == [("openrouter.ai", "allow")]


def test_host_policy_matching_blocks_win_and_the_default_applies() -> None:
    assert host_matches("*.example.com", "a.b.example.com")
    assert not host_matches("*.example.com", "example.com")
    assert not host_matches("example.com", "example.com.evil.net")
    policy = HostPolicy("a")
    assert policy.decide("anything.net") == "allow"  # a fresh account allows
    policy.change(
        default_mode="block", upsert={"*.good.io": "allow", "x.good.io": "block"}, remove=[]
    )
    assert policy.decide("a.good.io") == "allow"
    assert policy.decide("x.good.io") == "block"
    assert policy.decide("other.net") == "block"


def test_policy_updates_starter_pack_and_refusal_log(tmp_path: Path) -> None:
    v = vault(tmp_path)
    view = v.update_host_policy(
        UpdateHostPolicy(
            account="a",
            default_mode="block",
            starter_pack=True,
            upsert=[HostRule(pattern="evil.example", action="block")],
        )
    )
    assert view.default_mode == "block"
    assert ("pypi.org", "allow") in [(r.pattern, r.action) for r in view.rules]
    with pytest.raises(Refused):
        v.update_host_policy(UpdateHostPolicy(account="a", remove=["not.there"]))
    v.record_refusals("a", {("r1", "evil.example"): 3})
    v.record_refusals("a", {("r1", "evil.example"): 2, ("r2", "other.example"): 1})
    rows = v.blocked_hosts("a", None)
    assert [(r.host, r.seen_count) for r in rows] == [("evil.example", 5), ("other.example", 1)]
    assert rows[0].first_seen <= rows[0].last_seen
    assert [r.host for r in v.blocked_hosts("a", "r2")] == ["other.example"]
