"""Function calling, scored by comparing the calls made with the reference calls.

The row's functions are offered as OpenAI tools (BFCL types converted to JSON Schema:
dict->object, float->number, tuple->array, any->untyped); the calls come from the
reply's tool_calls, else from JSON or Python call syntax in its text. Each reference
call must match a distinct call (in any order, unless order-sensitive) with the same
name and every argument equal to one of its acceptable values (numbers numerically,
strings ignoring case and spacing; an acceptable "" means the argument may be left
out); unexpected arguments or extra calls fail.

Runs in the work sandbox with only the standard library and ``bench_task``.
"""

import ast
import json
import re
from typing import Any

from bench_task import BenchTask

# -- settings: the builtin Driver rewrites this block for its dataset (these fit BFCL v4) --
FUNCTIONS_FIELD = "functions"  # in input: a list of function specs
MESSAGES_FIELD = ""  # chat messages (or BFCL turns)
QUESTION_FIELD = "question"  # plain text, when there are no messages
NATIVE_TOOLS = True  # else in the prompt
ORDER_SENSITIVE = False  # False: calls compared as sets
ALLOW_EXTRA_CALLS = False  # False: an extra call fails
CASE_SENSITIVE = False  # for string arguments
MAX_TOKENS = 512
# -- end of settings --

SYSTEM_PROMPT = (
    "You are an expert in composing function calls. You are given a question and a set of "
    "functions. Make the function calls that answer the question, with the right arguments: "
    "several calls when the question needs several, none when no function applies."
)
PROMPT_TOOLS = (
    "\n\nThe functions, as JSON Schema:\n{functions}\n\n"
    "Reply with the calls only, as a JSON list: "
    '[{{"name": "function_name", "arguments": {{"argument": "value"}}}}]. '
    "Reply [] when no function applies."
)

# BFCL's parameter types, and Java/JavaScript-flavoured ones, as JSON Schema types.
_TYPES = {
    "dict": "object",
    "hashmap": "object",
    "float": "number",
    "double": "number",
    "tuple": "array",
    "list": "array",
    "arraylist": "array",
    "int": "integer",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "str": "string",
    "char": "string",
    "bool": "boolean",
}
_JSON_TYPES = {"object", "number", "array", "integer", "string", "boolean", "null"}
_KEEP = ("description", "enum", "default", "format", "minimum", "maximum")
# Reasoning models think aloud first; drafts in there are not the answer.
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.DOTALL | re.IGNORECASE)
_UNPARSED = "<unparsed arguments>"
_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```[\w-]*[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)

Call = tuple[str, dict[str, Any]]


def to_json_schema(schema: Any) -> dict[str, Any]:
    """A BFCL parameter schema as JSON Schema: dict->object, float->number,
    tuple->array, any->no type; unknown types become strings."""
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    kind = schema.get("type")
    if isinstance(kind, str) and kind.lower() != "any":
        kind = _TYPES.get(kind.lower(), kind.lower())
        out["type"] = kind if kind in _JSON_TYPES else "string"
    for key in _KEEP:
        if key in schema:
            out[key] = schema[key]
    properties = schema.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {str(k): to_json_schema(v) for k, v in properties.items()}
        out.setdefault("type", "object")
        required = schema.get("required")
        if isinstance(required, list):
            out["required"] = [r for r in required if r in properties]
    if "items" in schema:
        out["items"] = to_json_schema(schema["items"])
    elif out.get("type") == "array":
        out["items"] = {}
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def tool_name(name: str) -> str:
    """``name`` as OpenAI accepts it (letters, digits, "_" and "-"): "math.gcd" -> "math_gcd"."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "function"


def build_tools(functions: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """OpenAI ``tools`` for the row's functions, and tool name -> the function's own name."""
    tools: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for spec in functions:
        if isinstance(spec, dict) and isinstance(spec.get("function"), dict):
            spec = spec["function"]
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            continue
        name = tool_name(spec["name"])
        while name in names and names[name] != spec["name"]:
            name = f"{name[:60]}_{len(names)}"
        names[name] = spec["name"]
        parameters = to_json_schema(spec.get("parameters") or {"type": "dict"})
        function = {"name": name, "description": str(spec.get("description", ""))}
        tools.append({"type": "function", "function": {**function, "parameters": parameters}})
    return tools, names


def build_messages(input: Any) -> list[dict[str, Any]]:
    """The conversation: BFCL's turns flattened, a message list, or one user message."""
    fields = input if isinstance(input, dict) else {}
    value = fields.get(MESSAGES_FIELD) if MESSAGES_FIELD else None
    if isinstance(value, list) and value and all(isinstance(t, list) for t in value):
        value = [m for turn in value for m in turn]
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        messages = [dict(m) for m in value]
    else:
        text = fields.get(QUESTION_FIELD, "") if QUESTION_FIELD else input
        messages = [{"role": "user", "content": str(text)}]
    if not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": SYSTEM_PROMPT})
    return messages


def parse_calls(text: str, params: dict[str, list[str]] | None = None) -> list[Call] | None:
    """The calls written in ``text``, or None if it holds none in any known form.

    Tried on ``<tool_call>`` blocks, fenced blocks, then the whole text: JSON (a list of
    ``{name: {args}}``, ``{"name", "arguments"|"parameters"}`` or OpenAI ``tool_calls``,
    or one such object), then Python call syntax (``[f(a=1), g(b="x")]``), whose
    positional arguments are named after ``params[function]`` in order.
    """
    text = _THINK.sub("", text)
    tagged = _TOOL_CALL_TAG.findall(text)
    if tagged:
        return [c for block in tagged for c in _calls_from_text(block, params) or []]
    for block in [*_FENCE.findall(text), text]:
        found = _calls_from_text(block, params)
        if found is not None:
            return found
    return None


def _calls_from_text(text: str, params: dict[str, list[str]] | None) -> list[Call] | None:
    text = text.strip()
    if not text:
        return None
    try:
        return _calls_from_json(json.loads(text))
    except ValueError:
        pass
    calls = _calls_from_python(text, params or {})
    if calls is not None:
        return calls
    decoder = json.JSONDecoder()
    for match in list(re.finditer(r"[\[{]", text))[:20]:
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        calls = _calls_from_json(value)
        if calls:
            return calls
    return None


def _calls_from_json(value: Any) -> list[Call] | None:
    if isinstance(value, dict):
        for key in ("tool_calls", "calls", "function_calls"):
            if isinstance(value.get(key), list):
                return _calls_from_json(value[key])
        value = [value]
    if not isinstance(value, list):
        return None
    calls = []
    for item in value:
        call = _call_from_json(item)
        if call is None:
            return None
        calls.append(call)
    return calls


def _call_from_json(item: Any) -> Call | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):
        item = item["function"]
    if isinstance(item.get("name"), str):
        args: Any = next((item[k] for k in ("arguments", "parameters", "args") if k in item), {})
        return item["name"], _arguments(args)
    if len(item) == 1:
        name, args = next(iter(item.items()))
        if isinstance(args, dict | str):
            return str(name), _arguments(args)
    return None


def _arguments(args: Any) -> dict[str, Any]:
    """Arguments as a dict; a JSON (or Python literal) string is decoded."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            try:
                args = ast.literal_eval(args)
            except (ValueError, SyntaxError):
                return {_UNPARSED: args}
    return args if isinstance(args, dict) else {_UNPARSED: args}


def _calls_from_python(text: str, params: dict[str, list[str]]) -> list[Call] | None:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        try:
            module = ast.parse(text.strip())
        except SyntaxError:
            return None
        if not module.body or not all(isinstance(s, ast.Expr) for s in module.body):
            return None
        tree = ast.List(
            elts=[s.value for s in module.body if isinstance(s, ast.Expr)], ctx=ast.Load()
        )
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            return None
        name = ast.unparse(node.func)
        try:
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
            names = params.get(name, [])
            for position, arg in enumerate(node.args):
                key = names[position] if position < len(names) else f"<positional {position}>"
                args[key] = ast.literal_eval(arg)
        except (ValueError, SyntaxError):
            return None
        calls.append((name, args))
    return calls


def calls_from_reply(
    message: dict[str, Any], names: dict[str, str], params: dict[str, list[str]] | None = None
) -> list[Call] | None:
    """The calls in an assistant message: its ``tool_calls``, else calls in its text;
    tool names are mapped back to the functions' own names."""
    calls: list[Call] = []
    for tool_call in message.get("tool_calls") or []:
        function = tool_call.get("function") or {}
        name = str(function.get("name", ""))
        calls.append((names.get(name, name), _arguments(function.get("arguments") or {})))
    if calls:
        return calls
    found = parse_calls(str(message.get("content") or ""), params)
    return [(names.get(n, n), a) for n, a in found] if found is not None else None


def canonical(calls: list[Call]) -> str:
    """The calls as ``[{name: {args}}]`` JSON; sorted too when order does not count."""
    items = [json.dumps({n: a}, sort_keys=True, default=str) for n, a in calls]
    return "[" + ", ".join(items if ORDER_SENSITIVE else sorted(items)) + "]"


def expected_calls(expected: Any) -> list[Call]:
    """The reference calls, ``[{name: {arg: [acceptable values]}}]``."""
    items = expected if isinstance(expected, list) else [expected]
    calls = []
    for item in items:
        if not (isinstance(item, dict) and len(item) == 1):
            raise ValueError(f"a reference call must be {{name: {{arg: [values]}}}}: {item!r}")
        name, args = next(iter(item.items()))
        calls.append((str(name), dict(args or {})))
    return calls


def same_value(got: Any, want: Any) -> bool:
    """Numbers numerically, strings by case and whitespace, lists item by item,
    dicts key by key (a dict's list values being acceptable values, as in BFCL)."""
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(got, int | float) and isinstance(want, int | float):
        return float(got) == float(want)
    if isinstance(got, str) and isinstance(want, str):
        return _text(got) == _text(want)
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return len(got) == len(want) and all(map(same_value, got, want))
    if isinstance(got, dict) and isinstance(want, dict):
        return args_mismatch(got, want) is None
    return bool(got == want)


def args_mismatch(got: dict[str, Any], want: dict[str, Any]) -> str | None:
    """Why ``got`` does not satisfy ``want`` (arg -> acceptable values), or None.

    An acceptable value of "" means the argument may be left out.
    """
    for key in got:
        if key not in want:
            return f"unexpected argument {key!r}"
    for key, acceptable in want.items():
        options = acceptable if isinstance(acceptable, list) else [acceptable]
        if key not in got:
            if "" in options or not options:
                continue
            return f"missing argument {key!r}"
        if not any(same_value(got[key], o) for o in options if o != "" or got[key] == ""):
            return f"argument {key!r} is {got[key]!r}, expected one of {options!r}"
    return None


def mismatch(got: list[Call], want: list[Call]) -> str | None:
    """Why the calls made do not answer the reference calls, or None if they do."""
    fits = [
        [_same_name(g[0], w[0]) and args_mismatch(g[1], w[1]) is None for g in got] for w in want
    ]
    if ORDER_SENSITIVE:
        if len(got) != len(want) and not (ALLOW_EXTRA_CALLS and len(got) > len(want)):
            return f"expected {len(want)} calls, got {len(got)}"
        for i, (wanted, row) in enumerate(zip(want, fits, strict=True)):
            if not row[i]:
                return f"call {i + 1} does not match {wanted[0]}: " + _why(got[i], wanted)
        return None
    if len(got) < len(want) or (len(got) > len(want) and not ALLOW_EXTRA_CALLS):
        return f"expected {len(want)} calls, got {len(got)}"
    # Each reference call needs a distinct call that fits it: a bipartite matching.
    owner: dict[int, int] = {}

    def assign(w: int, seen: set[int]) -> bool:
        for g, ok in enumerate(fits[w]):
            if ok and g not in seen:
                seen.add(g)
                if g not in owner or assign(owner[g], seen):
                    owner[g] = w
                    return True
        return False

    for position, wanted in enumerate(want):
        if not assign(position, set()):
            near = [made for made in got if _same_name(made[0], wanted[0])]
            why = f": {_why(near[0], wanted)}" if near else ""
            return f"no call matches {wanted[0]}{why}"
    return None


def _same_name(got: str, want: str) -> bool:
    return got == want or got == tool_name(want)


def _why(got: Call, want: Call) -> str:
    if not _same_name(got[0], want[0]):
        return f"called {got[0]}"
    return args_mismatch(got[1], want[1]) or "arguments differ"


def _text(value: str) -> str:
    value = " ".join(value.split())
    return value if CASE_SENSITIVE else value.casefold()


class Task(BenchTask):
    """Offer the row's functions as tools; pass when the calls made are the expected ones."""

    def __init__(self) -> None:
        # index -> function name -> parameter names, for positional arguments in text.
        self._params: dict[int, dict[str, list[str]]] = {}

    def solve(self, index: int, input: Any) -> str:
        """Ask for calls with native ``tools`` (or the functions in the prompt)."""
        functions = (input.get(FUNCTIONS_FIELD) if isinstance(input, dict) else None) or []
        tools, names = build_tools(functions)
        params = {}
        for tool in tools:
            function = tool["function"]
            order = list(function["parameters"].get("properties", {}))
            params[function["name"]] = params[names[function["name"]]] = order
        self._params[index] = params
        messages = build_messages(input)
        options: dict[str, Any] = {"temperature": 0, "max_tokens": MAX_TOKENS}
        if NATIVE_TOOLS:
            reply = self.chat(messages, tools=tools, **options)
        else:
            listing = json.dumps([t["function"] for t in tools], indent=1)
            first = dict(messages[0])
            first["content"] = str(first.get("content", "")) + PROMPT_TOOLS.format(
                functions=listing
            )
            reply = self.chat([first, *messages[1:]], **options)
        message = reply["choices"][0]["message"]
        calls = calls_from_reply(message, names, params)
        if calls is None:
            return str(message.get("content") or "")
        return json.dumps([{n: a} for n, a in calls], default=str)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the calls answer the reference calls (see ``mismatch``), else 0.0."""
        got = parse_calls(output or "", self._params.get(index)) or []
        reason = mismatch(got, expected_calls(expected))
        return {
            "score": 1.0 if reason is None else 0.0,
            "parsed": canonical(got),
            "calls": len(got),
            "reason": reason,
        }
