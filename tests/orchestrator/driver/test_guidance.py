"""parse_guidance: the few concrete directives the builtin Driver recognises in prose."""

from typing import Any

import pytest

from benchwright_orchestrator.driver.builtin import Directives, parse_guidance


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, {}),
        ("   ", {}),
        ("Looks good to me.", {}),
        ("max_tokens 128", {"max_tokens": 128}),
        ("Use max tokens: 64, then max-tokens=32", {"max_tokens": 32}),
        ("zero-shot", {"few_shot": False}),
        ("Run it without few-shot examples", {"few_shot": False}),
        ("no few-shot", {"few_shot": False}),
        ("few-shot is fine", {"few_shot": True}),
        ("accept answers within 0.5", {"tolerance": 0.5}),
        ("a tolerance of 0.001", {"tolerance": 0.001}),
        ("use chain-of-thought", {"chain_of_thought": True}),
        ("no CoT, answer directly", {"chain_of_thought": False}),
        ("timeout 30s", {"timeout_s": 30.0}),
        ("a 5 second timeout", {"timeout_s": 5.0}),
        ("order-sensitive", {"order_sensitive": True}),
        ("the order matters", {"order_sensitive": True}),
        ("compare as sets", {"order_sensitive": False}),
        ("not order-sensitive", {"order_sensitive": False}),
        (
            "Order-insensitive, but no extra calls",
            {"order_sensitive": False, "allow_extra_calls": False},
        ),
        ("ignore extra calls", {"allow_extra_calls": True}),
        ("put the tools in the prompt", {"native_tools": False}),
        ("without native tools", {"native_tools": False}),
        ("use native tools", {"native_tools": True}),
        ("case-sensitive", {"case_sensitive": True}),
        ("case-insensitive", {"case_sensitive": False}),
        ("substring match", {"contains": True}),
        ("exact match, case-sensitive", {"contains": False, "case_sensitive": True}),
        # Opposite phrases: the one written last wins.
        ("order-sensitive... actually, compare as sets", {"order_sensitive": False}),
        ("compare as sets; no wait, order matters", {"order_sensitive": True}),
        # The developer guide's own fork (section 5.1): the complaint names the
        # problem, the instruction after it the fix.
        (
            "Parallel function calling failures are order-sensitive. Rewrite score() in "
            "task_impl.py to compare sets of {name, canonical_args} instead of ordered lists.",
            {"order_sensitive": False},
        ),
    ],
)
def test_directives_are_recognised(text: str | None, expected: dict[str, Any]) -> None:
    assert parse_guidance(text) == Directives(**expected)
