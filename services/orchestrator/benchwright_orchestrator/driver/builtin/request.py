"""Reading a run request in plain English: benchmark, subset, model, provider, scope.

"Run MMLU abstract algebra on openai/gpt-4o-mini via OpenRouter, first 20 tasks"
is read with fixed rules, in this order (each step blanks out what it used, so
that "20 tasks" is never taken for a model, nor a model id for a benchmark):

1. **Scope.** "N <unit>s from/of/per/in each <...> category|subject|topic|domain|
   subset" or "N per category" is ``per_category`` with ``n = N``; "first N",
   "top N", "N samples|tasks|questions|problems|examples|items|rows" and
   "limit N" are ``first_n``; otherwise ``all``. N is digits or a number word
   ("one" ... "twenty"; "a"/"a single" count as one before a unit).
2. **Provider.** "via|through|using|on|at|from|with <provider>", where
   <provider> is one of ``KNOWN_PROVIDERS`` not followed by "/", names the
   provider. "Open Router" and "together.ai" are read as openrouter and together.
3. **Model.** The first word after "on|with|using|against|for|model" that looks
   like a model id: letters, digits and ``._:-`` in "/"-separated segments, with
   a digit or one of ``/@-.:`` in it or a known family prefix (gpt, claude,
   llama, qwen...), and which is not a benchmark or subset name. Then:
   ``model@provider`` splits at the "@"; ``provider/model`` with a known
   provider as the first segment splits at the first "/" **unless** a provider
   was named explicitly ("openai/gpt-4o-mini via OpenRouter" is the model
   "openai/gpt-4o-mini" served by openrouter; "local/smollm2" is the model
   "smollm2" served by local). The model keeps the case it was written in.
4. **Benchmark.** Each benchmark's name, aliases and id are compared with the
   remaining words, ignoring case, spaces and punctuation ("gsm 8k", "GSM-8K",
   "human eval"). The longest match wins; two benchmarks matching equally long
   is ambiguous. A match followed by a variant word the catalog does not have
   ("MMLU Pro", "BFCL v4", "HumanEval+") names another benchmark: it is refused,
   naming the nearest ones, unless the request allows a substitute ("... or the
   nearest benchmark"); then the substitute runs and the resolution says so
   (``substituted_for``).
5. **Subset.** Slugs and names are matched the same way ("abstract algebra" is
   ``abstract_algebra``); the longest match wins. Without one: a
   ``per_category`` scope takes a subset whose rows have categories (``all``
   first); otherwise the only subset, else ``all``, else ``test``.

Anything that cannot be settled raises ``RequestNotUnderstood``, which says what
was missing and which benchmarks (or subsets) there are.
"""

import difflib
import re
from dataclasses import dataclass, field
from typing import Literal

from benchwright_shared.contracts import CatalogBenchmarkEntry, CatalogSubsetEntry

KNOWN_PROVIDERS = (
    "openrouter",
    "together",
    "local",
    "openai",
    "openai_compatible",
    "vllm",
    "ollama",
    "llamacpp",
)
# Word lists, kept as text: one line each reads better than a column of strings.
_FAMILIES = "gpt claude llama qwen mistral mixtral gemma gemini phi smollm deepseek grok olmo yi"
_STOPWORDS = """
    a an the all each every first top one some this that my our your it its model models
    samples sample tasks task questions question problems subset subsets category categories
    subject subjects benchmark benchmarks dataset data split on with using for via through
    against and or of from in to
"""
_NUMBERS = """
    one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty
"""
MODEL_FAMILIES = tuple(_FAMILIES.split())
STOPWORDS = frozenset(_STOPWORDS.split())
_WORDS = _NUMBERS.split()
NUMBER_WORDS = {word: i + 1 for i, word in enumerate(_WORDS)}

_COUNT = r"\d+|" + "|".join(_WORDS)
_N = rf"(?P<n>{_COUNT}|a\s+single|single|an?)"
_UNIT = r"(?:samples?|tasks?|questions?|problems?|examples?|items?|rows?|prompts?)"
_GROUP = r"(?:categor(?:y|ies)|subcategor(?:y|ies)|subjects?|topics?|domains?|subsets?)"
_PER_CATEGORY = (
    re.compile(
        rf"\b{_N}\s+(?:{_UNIT}\s+)?(?:from|of|for|in|per)\s+(?:each|every)\s+"
        rf"(?P<keep>(?:[\w.-]+\s+){{0,3}}?){_GROUP}\b",
        re.I,
    ),
    re.compile(rf"\b{_N}\s+(?:{_UNIT}\s+)?per\s+(?P<keep>){_GROUP}\b", re.I),
)
_FIRST_N = (
    re.compile(rf"\b(?:first|top)\s+(?P<n>{_COUNT})(?:\s+{_UNIT})?\b", re.I),
    re.compile(rf"\b(?P<n>{_COUNT})\s+{_UNIT}\b", re.I),
    re.compile(rf"(?:--|\b)limit(?:ed)?\s*(?:to|of|=|:)?\s*(?P<n>{_COUNT})\b", re.I),
)
_PROVIDER = re.compile(
    r"\b(?:via|through|using|on|at|from|with)\s+(?:the\s+)?"
    r"(?P<p>[A-Za-z][\w.-]*\w)(?![\w.-]*\s*/)(?:\s+(?:api|provider|endpoint|server)\b)?",
    re.I,
)
_MODEL_KEYWORD = re.compile(
    r"\b(?:on|with|using|against|for|model)\s+(?:the\s+)?(?:model\s+)?", re.I
)
_MODEL_ID = re.compile(r"[A-Za-z0-9][\w.:-]*(?:/[\w.:-]+)*(?:@[\w.-]+)?")
_PROVIDER_SPELLINGS = (
    (re.compile(r"\bopen[\s-]+router\b", re.I), "openrouter"),
    (re.compile(r"\btogether(?:[\s.]*ai)?\b", re.I), "together"),
    (re.compile(r"\bllama[.\s-]?cpp\b", re.I), "llamacpp"),
    (re.compile(r"\bopenai[\s-]compatible\b", re.I), "openai_compatible"),
)


# A word right after a benchmark's name that makes it another benchmark.
_VARIANT = re.compile(
    r"(?:pro|plus|lite|mini|hard|redux|verified|live|extended|multilingual|xl|x|"
    r"v\d+(?:\.\d+)*|\d+(?:\.\d+)*)",
    re.I,
)
_SUBSTITUTE_ALLOWED = re.compile(
    r"[,(]?\s*\b(?:or|else)\s+(?:the\s+)?(?:nearest|closest|most\s+similar|a\s+similar|"
    r"similar)(?:\s+(?:benchmark|one|match))?\b\)?|\bsubstitutes?\s+(?:are\s+|is\s+)?"
    r"(?:allowed|ok(?:ay)?|fine)\b",
    re.I,
)


class RequestNotUnderstood(Exception):
    """The request could not be read; the message says what is missing and what exists."""


@dataclass(frozen=True)
class Scope:
    """Which tasks: ``all``, the ``first_n``, or ``n`` from each category (``per_category``)."""

    kind: Literal["all", "first_n", "per_category"] = "all"
    n: int | None = None


@dataclass(frozen=True)
class ParsedRequest:
    """What a request asks for, and how it was read (``notes``)."""

    benchmark_id: str
    benchmark_name: str
    subset_id: str
    subset_slug: str
    model: str | None
    provider: str | None
    scope: Scope
    notes: list[str] = field(default_factory=list)
    # What the request named when the catalog lacked it and a substitute was allowed.
    substituted_for: str | None = None


def parse_request(
    text: str,
    catalog: list[CatalogBenchmarkEntry],
    *,
    providers: tuple[str, ...] = KNOWN_PROVIDERS,
) -> ParsedRequest:
    """Read ``text`` against ``catalog`` (the rules are in the module docstring)."""
    if not text or not text.strip():
        raise RequestNotUnderstood("the request is empty. " + _known(catalog))
    notes: list[str] = []
    for pattern, spelling in _PROVIDER_SPELLINGS:
        text = pattern.sub(spelling, text)
    scope, text = _scope(text, notes)
    provider, text = _provider(text, providers, notes)
    model, provider, text = _model(text, provider, providers, catalog, notes)
    allows_substitute = bool(_SUBSTITUTE_ALLOWED.search(text))
    text = _SUBSTITUTE_ALLOWED.sub(lambda m: " " * len(m.group()), text)
    benchmark, text, end = _benchmark(text, catalog, notes)
    substituted_for = _variant_named(text[end:], benchmark, catalog, allows_substitute, notes)
    subset = _subset(text, benchmark, scope, notes)
    return ParsedRequest(
        benchmark_id=benchmark.benchmark_id,
        benchmark_name=benchmark.name,
        subset_id=subset.subset_id,
        subset_slug=subset.slug,
        model=model,
        provider=provider,
        scope=scope,
        notes=notes,
        substituted_for=substituted_for,
    )


def _scope(text: str, notes: list[str]) -> tuple[Scope, str]:
    for pattern in _PER_CATEGORY:
        match = pattern.search(text)
        if match:
            n = _count(match.group("n"))
            notes.append(f"scope: {n} from each category (from {match.group().strip()!r})")
            return Scope("per_category", n), _blank(text, match, keep=match.group("keep"))
    for pattern in _FIRST_N:
        match = pattern.search(text)
        if match:
            n = _count(match.group("n"))
            notes.append(f"scope: the first {n} tasks (from {match.group().strip()!r})")
            return Scope("first_n", n), _blank(text, match)
    notes.append("scope: all tasks (no count or per-category phrase)")
    return Scope("all"), text


def _count(word: str) -> int:
    word = " ".join(word.lower().split())
    n = int(word) if word.isdigit() else NUMBER_WORDS.get(word, 1)
    if n < 1:
        raise RequestNotUnderstood(f"the request asks for {word} tasks; at least one is needed")
    return n


def _provider(text: str, providers: tuple[str, ...], notes: list[str]) -> tuple[str | None, str]:
    found: str | None = None
    for match in _PROVIDER.finditer(text):
        name = match.group("p").lower()
        if name not in providers:
            continue
        if found is not None and found != name:
            raise RequestNotUnderstood(f"the request names two providers, {found} and {name}")
        found = name
        notes.append(f"provider {name!r} (from {match.group().strip()!r})")
        text = _blank(text, match)
    return found, text


def _model(
    text: str,
    provider: str | None,
    providers: tuple[str, ...],
    catalog: list[CatalogBenchmarkEntry],
    notes: list[str],
) -> tuple[str | None, str | None, str]:
    reserved = {_key(n) for b in catalog for n in _names(b)}
    reserved |= {_key(n) for b in catalog for s in b.subsets for n in (s.slug, s.name)}
    for keyword in _MODEL_KEYWORD.finditer(text):
        match = _MODEL_ID.match(text, keyword.end())
        if match is None:
            continue
        token = match.group().rstrip(".:-")
        if not _looks_like_model(token, providers, reserved):
            continue
        model, said = token, None
        if "@" in model and model.rsplit("@", 1)[1].lower() in providers:
            model, said = model.rsplit("@", 1)
            said = said.lower()
        elif "/" in model and model.split("/", 1)[0].lower() in providers:
            head, rest = model.split("/", 1)
            if provider is None or provider == head.lower():
                model, said = rest, head.lower()
        if said is not None:
            if provider is not None and provider != said:
                raise RequestNotUnderstood(
                    f"the request names two providers, {provider} and {said} (in {token!r})"
                )
            provider = said
            notes.append(f"model {model!r} served by {said!r} (from {token!r})")
        else:
            where = f" served by {provider!r}" if provider else " (no provider named)"
            notes.append(f"model {model!r}{where}")
        start, end = match.span()
        return model, provider, text[:start] + " " * (end - start) + text[end:]
    notes.append("no model named")
    return None, provider, text


def _looks_like_model(token: str, providers: tuple[str, ...], reserved: set[str]) -> bool:
    lowered = token.lower()
    if lowered in STOPWORDS or re.fullmatch(r"[\d.]+", token) or _key(token) in reserved:
        return False
    if lowered in providers:
        return False
    return bool(re.search(r"[\d/@.:-]", token)) or lowered.startswith(MODEL_FAMILIES)


def _benchmark(
    text: str, catalog: list[CatalogBenchmarkEntry], notes: list[str]
) -> tuple[CatalogBenchmarkEntry, str, int]:
    """The benchmark the request names, the text with its name blanked, and where the
    name ended."""
    words = _words(text)
    best: list[tuple[int, CatalogBenchmarkEntry, str, tuple[int, int]]] = []
    for benchmark in catalog:
        matches = [(m, n) for n in _names(benchmark) if (m := _find(words, n)) is not None]
        if not matches:
            continue
        span, name = max(matches, key=lambda m: len(_key(m[1])))
        best.append((len(_key(name)), benchmark, name, span))
    if not best:
        raise RequestNotUnderstood("no benchmark is named in the request. " + _known(catalog))
    best.sort(key=lambda b: -b[0])
    if len(best) > 1 and best[1][0] == best[0][0] and best[1][1] is not best[0][1]:
        raise RequestNotUnderstood(
            f"the request could mean {best[0][1].name} or {best[1][1].name}; name one of them"
        )
    _, benchmark, name, (start, end) = best[0]
    how = "by name" if name == benchmark.name else f"by alias {name!r}"
    if name == benchmark.benchmark_id:
        how = "by id"
    notes.append(f"matched {benchmark.name!r} {how} (from {text[start:end]!r})")
    return benchmark, text[:start] + " " * (end - start) + text[end:], end


def _variant_named(
    after: str,
    benchmark: CatalogBenchmarkEntry,
    catalog: list[CatalogBenchmarkEntry],
    allowed: bool,
    notes: list[str],
) -> str | None:
    """What the request named, when that is a variant of ``benchmark`` the catalog lacks.

    ``after`` is the request's text after the benchmark's name; the variant is its
    first word ("MMLU Pro", "BFCL v4") or a "+" ("HumanEval+"). A subset of the
    benchmark is not a variant ("GSM8K main").
    """
    word = re.match(r"[ \t-]*(\+|[A-Za-z0-9.]+)", after)
    if word is None:
        return None
    token = word.group(1).rstrip(".")
    if token != "+" and not _VARIANT.fullmatch(token):
        return None
    # A subset named from that word on ("MMLU professional law") is no variant.
    words = _words(after)
    for subset in benchmark.subsets:
        for name in (subset.slug, subset.name):
            span = _find(words, name)
            if span is not None and span[0] == word.start(1):
                return None
    asked = f"{benchmark.name}{token}" if token == "+" else f"{benchmark.name} {token}"
    if not allowed:
        raise RequestNotUnderstood(
            f"the catalog has no {asked!r}; the nearest: {_nearest(asked, catalog)}. "
            f"Name {benchmark.name!r} to run it, or add 'or the nearest benchmark' to the "
            "request to allow a substitute"
        )
    notes.append(
        f"the catalog has no {asked!r}: running {benchmark.name} instead, as the request "
        "allows a substitute"
    )
    return asked


def _nearest(asked: str, catalog: list[CatalogBenchmarkEntry]) -> str:
    names = {n: b.name for b in catalog for n in _names(b)}
    close = difflib.get_close_matches(asked.lower(), [n.lower() for n in names], n=6, cutoff=0.3)
    lowered = {n.lower(): b for n, b in names.items()}
    found = list(dict.fromkeys(lowered[c] for c in close))[:3]
    return ", ".join(found) if found else "none"


def _subset(
    text: str, benchmark: CatalogBenchmarkEntry, scope: Scope, notes: list[str]
) -> CatalogSubsetEntry:
    subsets = benchmark.subsets
    if not subsets:
        raise RequestNotUnderstood(f"{benchmark.name} has no subsets to run")
    words = _words(text)
    found: list[tuple[int, CatalogSubsetEntry, str]] = []
    for subset in subsets:
        names = [n for n in dict.fromkeys((subset.slug, subset.name)) if _find(words, n)]
        if names:
            name = max(names, key=lambda n: len(_key(n)))
            found.append((len(_key(name)), subset, _found_text(text, words, name)))
    found.sort(key=lambda f: -f[0])
    if found:
        if len(found) > 1 and found[1][0] == found[0][0]:
            raise RequestNotUnderstood(
                f"the request could mean {benchmark.name} subset {found[0][1].slug} or "
                f"{found[1][1].slug}; name one of them"
            )
        subset = found[0][1]
        notes.append(f"subset {found[0][2]!r} -> {subset.slug}")
        if scope.kind == "per_category" and not subset.categories:
            raise RequestNotUnderstood(
                f"{benchmark.name} subset {subset.slug} has no categories to sample from; "
                f"subsets with categories: {_with_categories(benchmark) or 'none'}"
            )
        return subset
    if scope.kind == "per_category":
        with_categories = [s for s in subsets if s.categories]
        if not with_categories:
            raise RequestNotUnderstood(
                f"{benchmark.name} has no subset whose rows carry categories, so it cannot "
                "be sampled per category"
            )
        subset = next((s for s in with_categories if s.slug == "all"), with_categories[0])
        notes.append(f"subset {subset.slug} (its rows carry {len(subset.categories)} categories)")
        return subset
    for reason, pick in (
        ("the only subset", subsets[0] if len(subsets) == 1 else None),
        ("the default 'all' subset", next((s for s in subsets if s.slug == "all"), None)),
        ("the default 'test' subset", next((s for s in subsets if s.slug == "test"), None)),
    ):
        if pick is not None:
            notes.append(f"subset {pick.slug} ({reason}; none was named)")
            return pick
    slugs = ", ".join(s.slug for s in subsets)
    raise RequestNotUnderstood(f"name a subset of {benchmark.name}: one of {slugs}")


# -- word matching -------------------------------------------------------------

Word = tuple[str, int, int]  # lowercased word, start, end


def _words(text: str) -> list[Word]:
    return [(m.group().lower(), m.start(), m.end()) for m in re.finditer(r"[A-Za-z0-9]+", text)]


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _find(words: list[Word], name: str) -> tuple[int, int] | None:
    """Where ``name`` occurs as whole words, ignoring case, spacing and punctuation."""
    key = _key(name)
    if not key:
        return None
    for i in range(len(words)):
        joined = ""
        for j in range(i, len(words)):
            joined += words[j][0]
            if joined == key:
                return words[i][1], words[j][2]
            if not key.startswith(joined):
                break
    return None


def _found_text(text: str, words: list[Word], name: str) -> str:
    span = _find(words, name)
    return text[span[0] : span[1]] if span else name


def _names(benchmark: CatalogBenchmarkEntry) -> list[str]:
    return list(dict.fromkeys([benchmark.name, *benchmark.aliases, benchmark.benchmark_id]))


def _blank(text: str, match: re.Match[str], keep: str = "") -> str:
    start, end = match.span()
    filler = keep.ljust(end - start)
    return text[:start] + filler + text[end:]


def _known(catalog: list[CatalogBenchmarkEntry]) -> str:
    if not catalog:
        return "The catalog is empty."
    names = []
    for b in sorted(catalog, key=lambda b: b.name.lower()):
        aliases = f" (also {', '.join(b.aliases)})" if b.aliases else ""
        names.append(b.name + aliases)
    return "Known benchmarks: " + "; ".join(names) + "."


def _with_categories(benchmark: CatalogBenchmarkEntry) -> str:
    return ", ".join(s.slug for s in benchmark.subsets if s.categories)
