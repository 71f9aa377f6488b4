"""A small catalog and representative rows of each kind of dataset, shaped like the real ones."""

from typing import Any

from benchwright_shared.contracts import CatalogBenchmarkEntry, CatalogSubsetEntry


def _subset(
    slug: str, name: str | None = None, categories: tuple[str, ...] = ()
) -> CatalogSubsetEntry:
    return CatalogSubsetEntry(
        subset_id=f"sub_{slug}",
        slug=slug,
        name=name or slug.replace("_", " ").title(),
        task_count=10,
        categories=list(categories),
    )


CATALOG = [
    CatalogBenchmarkEntry(
        benchmark_id="bm_gsm8k",
        name="GSM8K",
        aliases=["gsm-8k", "grade school math"],
        subsets=[_subset("test"), _subset("train")],
    ),
    CatalogBenchmarkEntry(
        benchmark_id="bm_humaneval",
        name="HumanEval",
        aliases=["human-eval"],
        subsets=[_subset("test")],
    ),
    CatalogBenchmarkEntry(
        benchmark_id="bm_mmlu",
        name="MMLU",
        aliases=["massive multitask language understanding"],
        subsets=[
            _subset("all", "All subjects", ("abstract_algebra", "anatomy")),
            _subset("abstract_algebra"),
            _subset("anatomy"),
        ],
    ),
    CatalogBenchmarkEntry(
        benchmark_id="bm_bfcl",
        name="BFCL",
        aliases=["bfcl v4", "berkeley function calling leaderboard"],
        subsets=[
            _subset("simple"),
            _subset("multiple"),
            _subset("parallel"),
            _subset("parallel_multiple", "Parallel multiple"),
        ],
    ),
    CatalogBenchmarkEntry(
        benchmark_id="bm_nq",
        name="Natural Questions",
        aliases=["nq", "nq-open"],
        subsets=[_subset("validation")],
    ),
]

GSM8K_ROWS: list[dict[str, Any]] = [
    {
        "task_id": "gsm8k/test/0",
        "input": {
            "question": "Janet\u2019s ducks lay 16 eggs per day. She eats three for breakfast "
            "every morning and bakes muffins for her friends every day with four. She sells the "
            "remainder at the farmers' market daily for $2 per fresh duck egg. How much in "
            "dollars does she make every day at the farmers' market?"
        },
        "expected": "18",
    },
    {
        "task_id": "gsm8k/test/1",
        "input": {
            "question": "A robe takes 2 bolts of blue fiber and half that much white "
            "fiber. How many bolts in total does it take?"
        },
        "expected": "3",
    },
    {
        "task_id": "gsm8k/test/2",
        "input": {"question": "The temperature was 5 degrees and fell by 15. What is it now?"},
        "expected": "-10",
    },
    {
        "task_id": "gsm8k/test/3",
        "input": {
            "question": "Josh buys a house for $80,000 and puts in $50,000 in repairs. "
            "This increased the value by 150%. How much profit did he make?"
        },
        "expected": "70000",
    },
]

HUMANEVAL_ROWS: list[dict[str, Any]] = [
    {
        "task_id": "HumanEval/0",
        "input": {
            "prompt": (
                "from typing import List\n\n\n"
                "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
                '    """ Check if in given list of numbers, are any two numbers closer to each '
                "other than\n    given threshold.\n"
                "    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n"
                '    """\n'
            ),
            "entry_point": "has_close_elements",
        },
        "expected": {
            "test": (
                "\n\nMETADATA = {\n    'author': 'jt',\n    'dataset': 'test'\n}\n\n\n"
                "def check(candidate):\n"
                "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n"
                "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n"
                "    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True\n"
                "    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 0.5) == False\n"
            ),
            "entry_point": "has_close_elements",
            "canonical_solution": (
                "    for idx, elem in enumerate(numbers):\n"
                "        for idx2, elem2 in enumerate(numbers):\n"
                "            if idx != idx2:\n"
                "                distance = abs(elem - elem2)\n"
                "                if distance < threshold:\n"
                "                    return True\n\n"
                "    return False\n"
            ),
        },
    },
    {
        "task_id": "HumanEval/2",
        "input": {
            "prompt": (
                "\n\ndef truncate_number(number: float) -> float:\n"
                '    """ Given a positive floating point number, return its decimal part.\n'
                "    >>> truncate_number(3.5)\n    0.5\n"
                '    """\n'
            ),
            "entry_point": "truncate_number",
        },
        "expected": {
            "test": (
                "\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
                "    assert candidate(3.5) == 0.5\n"
                "    assert abs(candidate(1.33) - 0.33) < 1e-6\n"
                "    assert abs(candidate(123.456) - 0.456) < 1e-6\n"
            ),
            "entry_point": "truncate_number",
            "canonical_solution": "    return number % 1.0\n",
        },
    },
]

MMLU_ROWS: list[dict[str, Any]] = [
    {
        "task_id": "mmlu/abstract_algebra/0",
        "category": "abstract_algebra",
        "input": {
            "question": "Find the degree for the given field extension Q(sqrt(2), sqrt(3), "
            "sqrt(18)) over Q.",
            "choices": ["0", "4", "2", "6"],
            "subject": "abstract_algebra",
        },
        "expected": "B",
    },
    {
        "task_id": "mmlu/abstract_algebra/1",
        "category": "abstract_algebra",
        "input": {
            "question": "Let p = (1, 2, 5, 4)(2, 3) in S_5 . Find the index of <p> in S_5.",
            "choices": ["8", "2", "24", "120"],
            "subject": "abstract_algebra",
        },
        "expected": "C",
    },
    {
        "task_id": "mmlu/anatomy/0",
        "category": "anatomy",
        "input": {
            "question": "What is the embryological origin of the hyoid bone?",
            "choices": [
                "The first pharyngeal arch",
                "The first and second pharyngeal arches",
                "The second pharyngeal arch",
                "The second and third pharyngeal arches",
            ],
            "subject": "anatomy",
        },
        "expected": "D",
    },
]


def _bfcl_function(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} function.",
        "parameters": {"type": "dict", "properties": properties, "required": required},
    }


def _turns(text: str) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": text}]]


TRIANGLE = _bfcl_function(
    "calculate_triangle_area",
    {
        "base": {"type": "integer", "description": "The base of the triangle."},
        "height": {"type": "integer", "description": "The height of the triangle."},
        "unit": {"type": "string", "description": "The unit of measure, 'units' by default."},
    },
    ["base", "height"],
)
FACTORIAL = _bfcl_function(
    "math.factorial", {"number": {"type": "integer", "description": "The number."}}, ["number"]
)
HYPOT = _bfcl_function(
    "math.hypot",
    {"x": {"type": "float"}, "y": {"type": "float"}, "z": {"type": "float", "default": 0}},
    ["x", "y"],
)
PLAY = _bfcl_function(
    "spotify.play",
    {"artist": {"type": "string"}, "duration": {"type": "integer"}},
    ["artist", "duration"],
)
VELOCITY = _bfcl_function(
    "calc_velocity",
    {"distance": {"type": "float"}, "time": {"type": "float"}, "unit": {"type": "string"}},
    ["distance", "time"],
)
LOCATE = _bfcl_function(
    "locate_city",
    {
        "coordinates": {"type": "tuple", "items": {"type": "float"}},
        "options": {
            "type": "dict",
            "properties": {"precise": {"type": "boolean"}, "radius": {"type": "float"}},
        },
        "note": {"type": "any"},
    },
    ["coordinates"],
)

BFCL_ROWS: list[dict[str, Any]] = [
    {
        "task_id": "simple_0",
        "category": "simple",
        "input": {
            "question": _turns(
                "Find the area of a triangle with a base of 10 units and height of 5 units."
            ),
            "function": [TRIANGLE],
        },
        "expected": [
            {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}
        ],
    },
    {
        "task_id": "multiple_0",
        "category": "multiple",
        "input": {"question": _turns("What is 5 factorial?"), "function": [HYPOT, FACTORIAL]},
        "expected": [{"math.factorial": {"number": [5]}}],
    },
    {
        "task_id": "parallel_0",
        "category": "parallel",
        "input": {
            "question": _turns(
                "Play Taylor Swift for 20 minutes and Maroon 5 for 15 minutes on Spotify."
            ),
            "function": [PLAY],
        },
        "expected": [
            {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
            {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}},
        ],
    },
    {
        "task_id": "parallel_multiple_0",
        "category": "parallel_multiple",
        "input": {
            "question": _turns(
                "Usain ran 100 m in 9.58 s: what was his speed? Also locate the city at "
                "40.7, -74.0 precisely."
            ),
            "function": [VELOCITY, LOCATE],
        },
        "expected": [
            {"calc_velocity": {"distance": [100.0], "time": [9.58], "unit": ["", "m/s"]}},
            {
                "locate_city": {
                    "coordinates": [[40.7, -74.0]],
                    "options": [{"precise": [True], "radius": [""]}, ""],
                    "note": [""],
                }
            },
        ],
    },
    {
        "task_id": "irrelevance_0",
        "category": "irrelevance",
        "input": {"question": _turns("Tell me a joke about penguins."), "function": [FACTORIAL]},
        "expected": [],
    },
]

NQ_ROWS: list[dict[str, Any]] = [
    {
        "task_id": "nq/0",
        "input": {"question": "who got the first nobel prize in physics"},
        "expected": ["Wilhelm Conrad R\u00f6ntgen"],
    },
    {
        "task_id": "nq/1",
        "input": {"question": "who won the 2016 world series"},
        "expected": ["the Chicago Cubs", "Cubs"],
    },
    {
        "task_id": "nq/2",
        "input": {"question": "when is the next deadpool movie being released"},
        "expected": ["May 18, 2018"],
    },
]

ROWS_BY_KIND: dict[str, list[dict[str, Any]]] = {
    "math": GSM8K_ROWS,
    "code": HUMANEVAL_ROWS,
    "multiple_choice": MMLU_ROWS,
    "function_call": BFCL_ROWS,
    "exact_match": NQ_ROWS,
}
