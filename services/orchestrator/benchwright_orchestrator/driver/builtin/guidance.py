"""Concrete directives recognised in a person's free-text guidance.

Guidance is what a person wrote when forking a run or answering a review. The
builtin Driver cannot understand prose, so it looks for a few phrases, ignoring
case. When opposite phrases both appear, the one that ends last wins (on a tie,
the longer: "without native tools" beats the "native tools" inside it). Whether
or not anything is recognised, the guidance is recorded verbatim in the scorer's
docstring, so new guidance always yields new code, hence a new impl id.

Directive (kinds)             Phrases (on / off)
----------------------------  ------------------------------------------------------
max_tokens N (all)            "max_tokens 64", "max tokens: 64", "max-new-tokens=64"
few_shot (math)               "few-shot" / "zero-shot", "0-shot", "no few-shot",
                              "without (few-shot) examples", "no examples"
tolerance X (math)            "tolerance 0.01", "within 0.5"
chain_of_thought              "chain-of-thought", "CoT", "step by step", "reason first" /
  (multiple_choice)           "answer directly", "direct answer", "no CoT",
                              "without reasoning"
timeout_s N (code)            "timeout 30", "timeout: 30s", "a 30 second timeout"
order_sensitive               "order-sensitive", "order matters", "in the same order" /
  (function_call)             "order-insensitive", "not order-sensitive", "as sets",
                              "any order", "unordered", "ignore the order",
                              "compare sets", "instead of ordered lists"
allow_extra_calls             "allow extra calls", "ignore extra calls", "extra calls
  (function_call)             are fine" / "no extra calls", "penalize extra calls"
native_tools (function_call)  "native tools", "use the tools parameter" / "no tools
                              parameter", "tools in the prompt", "prompt-based"
case_sensitive (exact_match,  "case-sensitive", "match case" / "case-insensitive",
  function_call)              "not case-sensitive", "ignore case"
contains (exact_match)        "substring", "contains match", "lenient match", "the
                              reply contains the answer" / "exact match"
"""

import re
from dataclasses import dataclass

_NUM = r"(\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class Directives:
    """What the guidance asks for; ``None`` means it did not say."""

    max_tokens: int | None = None
    few_shot: bool | None = None
    tolerance: float | None = None
    chain_of_thought: bool | None = None
    timeout_s: float | None = None
    order_sensitive: bool | None = None
    allow_extra_calls: bool | None = None
    native_tools: bool | None = None
    case_sensitive: bool | None = None
    contains: bool | None = None


# (directive, value when matched, phrases). Of all the phrases found, the one that
# ends last decides; on a tie the longer one ("without native tools" over "native
# tools"), so a negation wins over the phrase it contains.
_SWITCHES: tuple[tuple[str, bool, tuple[str, ...]], ...] = (
    (
        "few_shot",
        False,
        (
            r"zero[\s_-]?shot",
            r"0[\s_-]?shot",
            r"no[\s_-]+few[\s_-]?shot",
            r"without\s+(?:few[\s_-]?shot\s+)?examples",
            r"no\s+examples",
        ),
    ),
    ("few_shot", True, (r"few[\s_-]?shot",)),
    (
        "chain_of_thought",
        True,
        (
            r"chain[\s_-]of[\s_-]thought",
            r"\bcot\b",
            r"step[\s_-]by[\s_-]step",
            r"reason\s+first",
            r"think\s+first",
        ),
    ),
    (
        "chain_of_thought",
        False,
        (
            r"answer\s+directly",
            r"direct\s+answer",
            r"no\s+(?:cot|chain[\s_-]of[\s_-]thought)",
            r"without\s+(?:cot|chain[\s_-]of[\s_-]thought|reasoning)",
        ),
    ),
    (
        "order_sensitive",
        True,
        (
            r"order[\s_-]sensitive",
            r"order\s+matters",
            r"in\s+the\s+same\s+order",
            r"respect(?:ing)?\s+(?:the\s+)?order",
        ),
    ),
    (
        "order_sensitive",
        False,
        (
            r"order[\s_-]insensitive",
            r"not\s+order[\s_-]sensitive",
            r"as\s+(?:a\s+)?sets?\b",
            r"any\s+order",
            r"unordered",
            r"ignor(?:e|ing)\s+(?:the\s+)?order",
            r"order\s+does\s*n[o']t\s+matter",
            # "compare sets of calls instead of ordered lists" (the guide's own fix)
            r"compare\s+(?:them\s+as\s+)?sets",
            r"instead\s+of\s+(?:an?\s+)?ordered\s+lists?",
        ),
    ),
    (
        "allow_extra_calls",
        True,
        (
            r"allow(?:ing)?\s+extra\s+calls",
            r"ignor(?:e|ing)\s+extra\s+calls",
            r"extra\s+calls\s+(?:are\s+)?(?:ok|fine|allowed)",
        ),
    ),
    (
        "allow_extra_calls",
        False,
        (
            r"no\s+extra\s+calls",
            r"penali[sz]e\s+extra\s+calls",
            r"extra\s+calls\s+(?:are\s+)?(?:wrong|fail|not\s+allowed)",
        ),
    ),
    (
        "native_tools",
        False,
        (
            r"no\s+tools?\s+param(?:eter)?",
            r"(?:tools?|functions?)\s+in\s+the\s+prompt",
            r"prompt[\s_-]based",
            r"(?:without|no)\s+native\s+tools",
        ),
    ),
    ("native_tools", True, (r"native\s+tools", r"use\s+(?:the\s+)?tools\s+param(?:eter)?")),
    ("case_sensitive", True, (r"case[\s_-]sensitive", r"match(?:ing)?\s+case", r"respect\s+case")),
    (
        "case_sensitive",
        False,
        (r"case[\s_-]insensitive", r"not\s+case[\s_-]sensitive", r"ignor(?:e|ing)\s+case"),
    ),
    (
        "contains",
        True,
        (
            r"substring",
            r"contains[\s_-]match",
            r"lenient\s+match",
            r"(?:reply|answer|output)\s+contains\s+(?:the|an?|any)\s+",
        ),
    ),
    ("contains", False, (r"exact[\s_-]match(?:ing)?\b", r"whole\s+answer")),
)
_MAX_TOKENS = re.compile(r"max[\s_-]?(?:new[\s_-]?)?tokens\s*[:=]?\s*(\d+)")
_TOLERANCE = re.compile(rf"(?:tolerance|within)\s*(?:of\s*)?[:=]?\s*{_NUM}")
_TIMEOUT = re.compile(
    rf"time[\s_-]?out\s*(?:of\s*)?[:=]?\s*{_NUM}|{_NUM}\s*(?:s|sec|secs|seconds?)\s+time[\s_-]?out"
)


def parse_guidance(text: str | None) -> Directives:
    """The directives ``text`` states (see the module docstring for the phrases)."""
    if not text or not text.strip():
        return Directives()
    lowered = text.lower()
    switches: dict[str, tuple[tuple[int, int], bool]] = {}
    for name, value, phrases in _SWITCHES:
        for match in re.finditer("|".join(phrases), lowered):
            rank = (match.end(), -match.start())
            if name not in switches or rank > switches[name][0]:
                switches[name] = (rank, value)

    def switch(name: str) -> bool | None:
        return switches[name][1] if name in switches else None

    tokens = _last(_MAX_TOKENS, lowered)
    tolerance = _last(_TOLERANCE, lowered)
    timeout = _last(_TIMEOUT, lowered)
    return Directives(
        max_tokens=max(1, int(tokens)) if tokens else None,
        few_shot=switch("few_shot"),
        tolerance=float(tolerance) if tolerance else None,
        chain_of_thought=switch("chain_of_thought"),
        timeout_s=max(1.0, float(timeout)) if timeout else None,
        order_sensitive=switch("order_sensitive"),
        allow_extra_calls=switch("allow_extra_calls"),
        native_tools=switch("native_tools"),
        case_sensitive=switch("case_sensitive"),
        contains=switch("contains"),
    )


def describe(directives: Directives, names: tuple[str, ...]) -> list[str]:
    """Human-readable lines for the directives in ``names`` that the guidance set."""
    lines = []
    for name in names:
        value = getattr(directives, name)
        if value is None:
            continue
        if isinstance(value, bool):
            lines.append(f"{name.replace('_', ' ')}: {'on' if value else 'off'}")
        else:
            lines.append(f"{name.replace('_', ' ')}: {value:g}")
    return lines


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    groups = [g for g in matches[-1].groups() if g is not None]
    return groups[0] if groups else None
