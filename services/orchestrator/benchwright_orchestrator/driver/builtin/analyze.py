"""What kind of benchmark a dataset is, decided from the shape of its rows.

Rows look like ``{"task_id", "input", "expected", maybe "category"}``. Up to
``SAMPLE_SIZE`` rows, evenly spaced over the dataset (datasets are often sorted by
category), are inspected, and the first kind whose test **every** sampled row
passes wins, in this order:

1. ``code``: ``input`` has a string field holding Python source (``def``),
   ``expected`` is an object, and a test field (``test``/``tests``/``test_code``)
   and an ``entry_point`` are in ``expected`` or ``input``.
2. ``function_call``: ``input`` has a list of function specs (objects with a
   ``name``, or OpenAI ``{"type": "function", "function": {...}}`` tools) under
   ``function``/``functions``/``tools``..., and ``expected`` is a list (maybe
   empty) of ``{func_name: {arg: [acceptable values]}}``.
3. ``multiple_choice``: ``input`` has a list of 2-10 strings (``choices``,
   ``options``...) and ``expected`` names one: a letter A-J or a 0-based index.
4. ``math``: ``expected`` is a number or a numeric string ("18", "-3.5", "1,234", "3/4").
5. ``exact_match``: ``expected`` is a short string or a list of short strings.

Structural kinds come first: a multiple-choice row's letter is a short string
too. Requiring every sampled row keeps a trivia set with mostly numeric answers
from being scored as math. ``Analysis.candidates`` lists every kind that fits,
best first, for a Driver whose scorer fails its proof; the structural kinds have
no fallback (scoring a choice or a call as text would hide the choices or the
tools), while ``math`` falls back to ``exact_match``. Nothing here does I/O.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from benchwright_orchestrator.driver.builtin.shapes import (
    describe_schema,
    is_expected_call,
    is_function_spec,
    is_numeric,
    letter_index,
)

Kind = Literal["code", "function_call", "multiple_choice", "math", "exact_match"]
KINDS: tuple[Kind, ...] = ("code", "function_call", "multiple_choice", "math", "exact_match")

# Kinds recognised by the structure of the rows; only the others fall back to each other.
STRUCTURAL: tuple[Kind, ...] = ("code", "function_call", "multiple_choice")
SAMPLE_SIZE = 25
SHORT_ANSWER_CHARS = 200
SHORT_ANSWER_WORDS = 20

# Preferred names, best first; any other field of the right shape is a fallback.
QUESTION_NAMES = ("question", "problem", "prompt", "query", "input", "text", "instruction")
CONTEXT_NAMES = ("context", "passage", "article", "document", "paragraph")
SUBJECT_NAMES = ("subject", "topic", "category", "domain")
CHOICE_NAMES = ("choices", "options", "endings", "candidates", "answers")
FUNCTION_NAMES = ("function", "functions", "tools", "tool_specs", "apis")
MESSAGE_NAMES = ("question", "messages", "conversation", "prompt", "dialog")
CODE_NAMES = ("prompt", "code", "signature", "question", "text")
TEST_NAMES = ("test", "tests", "test_code")
SOLUTION_NAMES = ("canonical_solution", "solution", "reference", "reference_solution")


class UnrecognizedDataset(Exception):
    """No kind fits the sampled rows; the message says what was seen and tried."""


# Roles a field can play. Values in ``Analysis.fields`` are keys of ``input``, except
# for ``solution`` (a key of ``expected``) and ``test`` and ``entry_point`` (looked up in
# ``expected``, then ``input``); ``question: ""`` means the input itself is the text.
ROLES = (
    "question",
    "context",
    "subject",
    "choices",
    "functions",
    "messages",
    "prompt",
    "entry_point",
    "test",
    "solution",
)
Fields = dict[str, str]


@dataclass(frozen=True)
class Analysis:
    """The kind of a dataset, its canonical schema, where its fields are, and why."""

    kind: Kind
    # Dotted path -> JSON type ("input.choices": "array<string>"), sorted by path;
    # types seen across rows are joined by "|", and "?" marks a field some rows lack.
    schema: dict[str, str]
    # Role (see ``ROLES``) -> field name, for the roles the data has.
    fields: dict[str, str]
    evidence: list[str]
    sample_size: int
    # Every kind whose test the rows pass, best first (``kind`` is the first): a
    # Driver whose scorer fails its proof can try the next. ``fields`` covers them all.
    candidates: list[Kind]


def analyze_rows(rows: list[dict[str, Any]]) -> Analysis:
    """Decide the kind of ``rows`` (see the module docstring for the rules)."""
    sample = _sample(rows)
    if not sample:
        raise UnrecognizedDataset("the dataset has no rows to inspect")
    bad = next((i for i, row in enumerate(sample) if not isinstance(row, dict)), None)
    if bad is not None or any("expected" not in row for row in sample):
        raise UnrecognizedDataset(
            'every row must be an object with "input" and "expected"; sampled row '
            f"{bad if bad is not None else _first_without(sample, 'expected')} is not"
        )
    schema = describe_schema(sample)
    n = len(sample)
    evidence = [f"sampled {n} of {len(rows)} rows, evenly spaced"]
    fields: dict[str, str] = {}
    candidates: list[Kind] = []
    for kind, detector in _DETECTORS:
        found, notes = detector(sample)
        if found is None:
            if not candidates:
                evidence.append(f"not {kind}: {notes[0]}")
            continue
        if not candidates:
            evidence.extend(notes)
        elif candidates[0] in STRUCTURAL:
            # Scoring a choice or a call by its text alone would hide the choices/tools.
            break
        else:
            evidence.append(f"would also fit {kind}")
        candidates.append(kind)
        fields = {**found, **fields}
    if not candidates:
        shape = ", ".join(f"{path}: {kind}" for path, kind in schema.items())
        raise UnrecognizedDataset(
            f"no scorer kind fits these rows ({shape}). Tried: " + "; ".join(evidence[1:])
        )
    ordered = {role: fields[role] for role in ROLES if role in fields}
    return Analysis(
        kind=candidates[0],
        schema=schema,
        fields=ordered,
        evidence=evidence,
        sample_size=n,
        candidates=candidates,
    )


# -- detectors: (fields, evidence) on success, (None, [why not]) otherwise -------

Detection = tuple[Fields | None, list[str]]


def _detect_code(rows: list[dict[str, Any]]) -> Detection:
    expected = [r["expected"] for r in rows]
    if not all(isinstance(e, dict) for e in expected):
        return None, ["expected is not an object (with a reference solution or tests)"]
    inputs = _inputs(rows)
    if inputs is None:
        return None, ["input is not an object"]
    test_source = "expected"
    test = _common_key(expected, TEST_NAMES, _is_test_code)
    if test is None:
        test_source, test = "input", _common_key(inputs, TEST_NAMES, _is_test_code)
    if test is None:
        return None, ["no test field (test/tests/test_code) in expected or input in every row"]
    ep_source = "expected" if all(isinstance(e.get("entry_point"), str) for e in expected) else ""
    if not ep_source and all(isinstance(i.get("entry_point"), str) for i in inputs):
        ep_source = "input"
    if not ep_source:
        return None, ["no entry_point in expected or input"]
    entry = [
        str((e if ep_source == "expected" else i)["entry_point"])
        for e, i in zip(expected, inputs, strict=True)
    ]
    # The tests define functions too: when they are in input, they are not the prompt.
    rest = [{k: v for k, v in i.items() if k != test} for i in inputs]
    prompt = _common_key(
        rest if test_source == "input" else inputs,
        CODE_NAMES,
        lambda v: isinstance(v, str) and re.search(r"\bdef\s", v) is not None,
        any_name=True,
    )
    if prompt is None:
        return None, ["no input field holds Python source (def ...)"]
    defines = sum(
        re.search(rf"\bdef\s+{re.escape(name)}\s*\(", i[prompt]) is not None
        for i, name in zip(inputs, entry, strict=True)
    )
    solution = _common_key(expected, SOLUTION_NAMES, lambda v: isinstance(v, str))
    n = len(rows)
    notes = [
        f"input.{prompt} holds Python source in {n}/{n} rows "
        f"(defining the entry point in {defines}/{n})",
        f"{test_source}.{test} holds test code and {ep_source}.entry_point names the "
        f"function in {n}/{n} rows",
    ]
    notes.append(
        f"expected.{solution} holds a reference solution"
        if solution
        else "no reference solution field"
    )
    fields = {"prompt": prompt, "entry_point": "entry_point", "test": test}
    return fields | ({"solution": solution} if solution else {}), notes


def _is_test_code(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _detect_function_call(rows: list[dict[str, Any]]) -> Detection:
    inputs = _inputs(rows)
    if inputs is None:
        return None, ["input is not an object"]
    functions = _common_key(
        inputs,
        FUNCTION_NAMES,
        lambda v: isinstance(v, list) and bool(v) and all(is_function_spec(f) for f in v),
        any_name=True,
    )
    if functions is None:
        return None, ["no input field holds a list of function specs"]
    expected = [r["expected"] for r in rows]
    if not all(isinstance(e, list) and all(is_expected_call(c) for c in e) for e in expected):
        return None, ["expected is not a list of {func_name: {arg: [acceptable values]}}"]
    rest = [{k: v for k, v in i.items() if k != functions} for i in inputs]
    messages = _common_key(rest, MESSAGE_NAMES, _is_messages, any_name=True)
    question = None if messages else _text_field(rest)
    if messages is None and question is None:
        return None, ["no input field holds the user's messages or question"]
    n = len(rows)
    calls = sum(len(e) for e in expected)
    where = f"input.{messages} holds chat messages" if messages else f"input.{question} is text"
    notes = [
        f"input.{functions} is a list of function specs in {n}/{n} rows",
        f"expected is a list of calls {{name: {{arg: [acceptable]}}}} in {n}/{n} rows "
        f"({calls} calls in all)",
        where,
    ]
    text = {"messages": messages} if messages else {"question": question or ""}
    return {"functions": functions, **text}, notes


def _detect_multiple_choice(rows: list[dict[str, Any]]) -> Detection:
    inputs = _inputs(rows)
    if inputs is None:
        return None, ["input is not an object"]
    choices = _common_key(
        inputs,
        CHOICE_NAMES,
        lambda v: isinstance(v, list) and 2 <= len(v) <= 10 and all(isinstance(c, str) for c in v),
        any_name=True,
    )
    if choices is None:
        return None, ["no input field holds a list of 2-10 strings"]
    named = [
        letter_index(r["expected"], len(i[choices])) for r, i in zip(rows, inputs, strict=True)
    ]
    missing = next((k for k, v in enumerate(named) if v is None), None)
    if missing is not None:
        got = rows[missing]["expected"]
        return None, [f"expected {got!r} (sampled row {missing}) names no choice"]
    rest = [{k: v for k, v in i.items() if k != choices} for i in inputs]
    subject = _common_key(rest, SUBJECT_NAMES, lambda v: isinstance(v, str) and 0 < len(v) <= 80)
    context = _common_key(rest, CONTEXT_NAMES, lambda v: isinstance(v, str))
    others = {k: v for k, v in rest[0].items() if k not in (subject, context)}
    question = _text_field([{k: v for k, v in r.items() if k in others} for r in rest])
    if question is None:
        return None, ["no input field holds the question text"]
    sizes = sorted({len(i[choices]) for i in inputs})
    size = f"{sizes[0]}-{sizes[-1]}" if len(sizes) > 1 else str(sizes[0])
    letters = all(
        isinstance(r["expected"], str) and not r["expected"].strip().isdigit() for r in rows
    )
    n = len(rows)
    about = f", input.{subject} its subject" if subject else ""
    notes = [
        f"input.{choices} is a list of {size} strings in {n}/{n} rows",
        f"expected names one of them ({'letters' if letters else '0-based indices'}) "
        f"in {n}/{n} rows",
        f"input.{question} is the question{about}",
    ]
    fields = {"question": question, "choices": choices, "subject": subject, "context": context}
    return {role: name for role, name in fields.items() if name is not None}, notes


def _detect_math(rows: list[dict[str, Any]]) -> Detection:
    numeric = [is_numeric(r["expected"]) for r in rows]
    if not all(numeric):
        bad = numeric.index(False)
        return None, [
            f"expected {_short(rows[bad]['expected'])} (sampled row {bad}) is not a number"
        ]
    question = _question_field(rows)
    if question is None:
        return None, ["no input field holds the problem text"]
    n = len(rows)
    where = (
        "the input is the problem text" if question == "" else f"input.{question} is the problem"
    )
    return {"question": question}, [f"expected is a number in {n}/{n} rows", where]


def _detect_exact_match(rows: list[dict[str, Any]]) -> Detection:
    def short(value: Any) -> bool:
        return (
            isinstance(value, str | int | float)
            and not isinstance(value, bool)
            and 0 < len(str(value).strip()) <= SHORT_ANSWER_CHARS
            and len(str(value).split()) <= SHORT_ANSWER_WORDS
        )

    for k, row in enumerate(rows):
        value = row["expected"]
        ok = short(value) or (isinstance(value, list) and bool(value) and all(map(short, value)))
        if not ok:
            return None, [f"expected {_short(value)} (sampled row {k}) is not a short answer"]
    question = _question_field(rows)
    if question is None:
        return None, ["no input field holds the question text"]
    lists = sum(isinstance(r["expected"], list) for r in rows)
    context = None
    inputs = _inputs(rows)
    if inputs is not None:
        rest = [{k: v for k, v in i.items() if k != question} for i in inputs]
        context = _common_key(rest, CONTEXT_NAMES, lambda v: isinstance(v, str))
    n = len(rows)
    notes = [
        f"expected is a short answer in {n}/{n} rows ({lists} with a list of acceptable answers)",
        "the input is the question" if question == "" else f"input.{question} is the question",
    ]
    if context:
        notes.append(f"input.{context} is context for the question")
    return {"question": question} | ({"context": context} if context else {}), notes


_DETECTORS: tuple[tuple[Kind, Callable[[list[dict[str, Any]]], Detection]], ...] = (
    ("code", _detect_code),
    ("function_call", _detect_function_call),
    ("multiple_choice", _detect_multiple_choice),
    ("math", _detect_math),
    ("exact_match", _detect_exact_match),
)


# -- helpers -------------------------------------------------------------------


def _sample(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    n = min(len(rows), SAMPLE_SIZE)
    return [rows[i * len(rows) // n] for i in range(n)]


def _first_without(rows: list[dict[str, Any]], key: str) -> int:
    return next(i for i, row in enumerate(rows) if key not in row)


def _inputs(rows: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    inputs = [r.get("input") for r in rows]
    return inputs if all(isinstance(i, dict) for i in inputs) else None  # type: ignore[return-value]


def _common_key(
    objects: list[dict[str, Any]],
    preferred: tuple[str, ...],
    test: Callable[[Any], bool],
    *,
    any_name: bool = False,
) -> str | None:
    """The first preferred key passing ``test`` in every object; with ``any_name``, any
    other key (alphabetically) after them."""
    if not objects:
        return None
    others = sorted(k for k in objects[0] if isinstance(k, str) and k not in preferred)
    keys: list[str] = [*preferred, *(others if any_name else [])]
    for key in keys:
        if all(key in o and test(o[key]) for o in objects):
            return key
    return None


def _text_field(objects: list[dict[str, Any]]) -> str | None:
    """A preferred text key, else the string key with the longest text on average."""
    if not objects:
        return None
    texts = sorted(
        k for k in objects[0] if all(isinstance(o.get(k), str) and o[k].strip() for o in objects)
    )
    preferred = [k for k in QUESTION_NAMES if k in texts]
    if preferred:
        return preferred[0]
    return max(texts, key=lambda k: sum(len(o[k]) for o in objects)) if texts else None


def _question_field(rows: list[dict[str, Any]]) -> str | None:
    if all(isinstance(r.get("input"), str) and r["input"].strip() for r in rows):
        return ""
    inputs = _inputs(rows)
    return _text_field(inputs) if inputs is not None else None


def _is_messages(value: Any) -> bool:
    """Chat messages, or BFCL's list of turns, each a list of messages."""
    if not isinstance(value, list) or not value:
        return False
    if all(isinstance(turn, list) for turn in value):
        value = [m for turn in value for m in turn]
    return bool(value) and all(isinstance(m, dict) and "content" in m for m in value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
