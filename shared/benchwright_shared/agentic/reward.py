"""A verifier's reward, read as Harbor reads it (harbor.verifier.verifier).

``tests/test.sh`` writes ``/logs/verifier/reward.json`` (a flat JSON object of
numbers) or ``/logs/verifier/reward.txt`` (one number); the JSON wins when both
are there. The score is the ``reward`` key, or the only key when there is one
(Harbor's "primary reward"); every key is kept as the score's metadata.

A verifier that wrote nothing, or something that is not a finite number, is a
``VerifierError``: an error row naming it, never a reward of 0.
"""

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

VERIFIER_DIR = "/logs/verifier"
REWARD_TEXT = "reward.txt"
REWARD_JSON = "reward.json"
REWARD_TEXT_PATH = f"{VERIFIER_DIR}/{REWARD_TEXT}"
REWARD_JSON_PATH = f"{VERIFIER_DIR}/{REWARD_JSON}"
PRIMARY_KEY = "reward"
# A reward file is a number or a small object; anything larger is not one.
MAX_REWARD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Reward:
    """The task's score and every reward the verifier wrote."""

    score: float
    metadata: Mapping[str, float] = field(default_factory=dict)


class VerifierError(Exception):
    """The verifier gave no usable reward; ``code`` says how, ``file`` which file."""

    def __init__(self, code: str, detail: str, file: str | None = None) -> None:
        self.code = code
        self.detail = detail
        self.file = file
        super().__init__(detail)


def parse_reward(files: Mapping[str, bytes | str | None]) -> Reward:
    """The reward in ``{"reward.txt" | "reward.json": content}`` (absent: missing or None).

    Raises ``VerifierError``.
    """
    json_content = files.get(REWARD_JSON)
    if json_content is not None:
        return _from_json(_text(REWARD_JSON, json_content))
    text_content = files.get(REWARD_TEXT)
    if text_content is not None:
        return _from_text(_text(REWARD_TEXT, text_content))
    raise VerifierError(
        "reward_missing",
        f"the verifier wrote neither {REWARD_TEXT_PATH} nor {REWARD_JSON_PATH}",
    )


def _text(name: str, content: bytes | str) -> str:
    if len(content) > MAX_REWARD_BYTES:
        raise VerifierError(
            "reward_unreadable", f"{name} holds more than {MAX_REWARD_BYTES} bytes", name
        )
    try:
        text = content.decode() if isinstance(content, bytes) else content
    except UnicodeDecodeError:
        raise VerifierError("reward_unreadable", f"{name} is not UTF-8 text", name) from None
    if not text.strip():
        raise VerifierError("reward_empty", f"{name} is empty", name)
    return text


def _finite(name: str, key: str, value: object) -> float:
    # Harbor accepts JSON numbers (booleans among them, being ints) and nothing else.
    if not isinstance(value, int | float):
        raise VerifierError("reward_not_numeric", f"{name}: {key} is {value!r}, not a number", name)
    number = float(value)
    if not math.isfinite(number):
        raise VerifierError("reward_not_numeric", f"{name}: {key} is {value!r}, not finite", name)
    return number


def _from_text(text: str) -> Reward:
    try:
        value = float(text)
    except ValueError:
        raise VerifierError(
            "reward_not_numeric",
            f"{REWARD_TEXT} holds {text.strip()[:80]!r}, not a number",
            REWARD_TEXT,
        ) from None
    score = _finite(REWARD_TEXT, PRIMARY_KEY, value)
    return Reward(score=score, metadata={PRIMARY_KEY: score})


def _from_json(text: str) -> Reward:
    try:
        data = json.loads(text)
    except ValueError:
        raise VerifierError(
            "reward_unreadable", f"{REWARD_JSON} is not JSON", REWARD_JSON
        ) from None
    if not isinstance(data, dict) or not data:
        raise VerifierError(
            "reward_unreadable",
            f'{REWARD_JSON} must be an object of named numbers, like {{"reward": 1}}',
            REWARD_JSON,
        )
    rewards = {str(key): _finite(REWARD_JSON, str(key), value) for key, value in data.items()}
    if PRIMARY_KEY in rewards:
        return Reward(score=rewards[PRIMARY_KEY], metadata=rewards)
    if len(rewards) == 1:
        return Reward(score=next(iter(rewards.values())), metadata=rewards)
    raise VerifierError(
        "reward_ambiguous",
        f"{REWARD_JSON} has {len(rewards)} keys ({', '.join(sorted(rewards)[:10])}) and no "
        f"{PRIMARY_KEY!r} key to say which is the score",
        REWARD_JSON,
    )
