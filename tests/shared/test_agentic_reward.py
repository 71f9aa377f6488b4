"""A verifier's reward files, read as Harbor reads them."""

import pytest

from benchwright_shared.agentic import Reward, VerifierError, parse_reward


def test_reward_txt_is_one_number() -> None:
    assert parse_reward({"reward.txt": b"1\n"}) == Reward(score=1.0, metadata={"reward": 1.0})
    assert parse_reward({"reward.txt": " 0.25 "}).score == 0.25
    assert parse_reward({"reward.txt": b"0"}).score == 0.0  # a real zero, not an error


def test_reward_json_takes_the_reward_key_and_keeps_every_key() -> None:
    reward = parse_reward({"reward.json": b'{"reward": 0.5, "records": 1, "order": 0}'})
    assert reward.score == 0.5
    assert reward.metadata == {"reward": 0.5, "records": 1.0, "order": 0.0}
    # Harbor's primary reward: the only key when there is no "reward" key.
    assert parse_reward({"reward.json": '{"accuracy": 0.75}'}).score == 0.75
    # JSON wins when both files are there, as in Harbor's verifier.
    both = parse_reward({"reward.json": '{"reward": 1}', "reward.txt": "0"})
    assert both.score == 1.0
    assert parse_reward({"reward.json": '{"reward": true}'}).score == 1.0


@pytest.mark.parametrize(
    ("files", "code"),
    [
        ({}, "reward_missing"),
        ({"reward.txt": None, "reward.json": None}, "reward_missing"),
        ({"reward.txt": b""}, "reward_empty"),
        ({"reward.txt": "  \n"}, "reward_empty"),
        ({"reward.txt": b"passed"}, "reward_not_numeric"),
        ({"reward.txt": b"nan"}, "reward_not_numeric"),
        ({"reward.txt": b"inf"}, "reward_not_numeric"),
        ({"reward.txt": b"\xff\xfe"}, "reward_unreadable"),
        ({"reward.txt": b"1" * 70_000}, "reward_unreadable"),
        ({"reward.json": b"{not json"}, "reward_unreadable"),
        ({"reward.json": b"1"}, "reward_unreadable"),
        ({"reward.json": b"{}"}, "reward_unreadable"),
        ({"reward.json": b'{"reward": "1"}'}, "reward_not_numeric"),
        ({"reward.json": b'{"reward": NaN}'}, "reward_not_numeric"),
        ({"reward.json": b'{"reward": 1e999}'}, "reward_not_numeric"),
        ({"reward.json": b'{"a": 1, "b": 0}'}, "reward_ambiguous"),
    ],
)
def test_a_bad_or_missing_reward_is_a_verifier_error_not_a_zero(
    files: dict[str, bytes | str | None], code: str
) -> None:
    with pytest.raises(VerifierError) as caught:
        parse_reward(files)
    assert caught.value.code == code
    if code != "reward_missing":
        assert caught.value.file in ("reward.txt", "reward.json")
