"""The benchwright-starter dataset, and a scripted agent that solves exactly three of it.

``STARTER_SCRIPTS`` drives the platform's own agent through ``ScriptedAgentModel`` or
``ScriptedAgentServer``: it solves ``write-greeting`` (write_file), ``fix-median``
(read_file, then edit_file) and ``csv-top-region`` (shell); it gets
``json-active-users`` wrong (an empty list) and does half of ``organize-logs`` (the
logs moved, the draft not renamed). Every decision is fixed, so a run scores exactly
``SOLVED`` whatever the machine.
"""

from pathlib import Path

from tests.support.scripted_agent_model import ScriptBook, call, final

DATASET_NAME = "benchwright-starter"
DATASET = Path(__file__).resolve().parents[2] / "examples" / "harbor" / DATASET_NAME
TASKS = ("csv-top-region", "fix-median", "json-active-users", "organize-logs", "write-greeting")
SOLVED = frozenset({"csv-top-region", "fix-median", "write-greeting"})

TOP_REGION = (
    'python3 -c "import csv, collections; r = collections.Counter(); '
    "[r.update({row['region']: int(row['units']) * float(row['unit_price'])}) "
    "for row in csv.DictReader(open('data/sales.csv'))]; "
    "open('answer.txt', 'w').write(r.most_common(1)[0][0] + chr(10))\""
)
FIXED_MEDIAN = """def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
"""
BROKEN_MEDIAN = """def median(values):
    values.sort()
    middle = len(values) // 2
    return values[middle]
"""

STARTER_SCRIPTS = {
    "greeting.txt": [
        call("write_file", path="greeting.txt", content="Hello from Benchwright!\n"),
        final("wrote /app/greeting.txt"),
    ],
    "median(values)": [
        call("read_file", path="stats.py"),
        call("edit_file", path="/app/stats.py", old=BROKEN_MEDIAN, new=FIXED_MEDIAN),
        call("shell", command="python3 -c 'import stats; print(stats.median([4, 1, 3, 2]))'"),
        final("median fixed"),
    ],
    "highest total revenue": [
        call("shell", command="head -3 data/sales.csv"),
        call("shell", command=TOP_REGION),
        final("answered"),
    ],
    "active_users.json": [
        call("write_file", path="active_users.json", content="[]\n"),
        final("done (wrongly: nobody is listed)"),
    ],
    "Tidy it up": [
        call("shell", command="mkdir -p /app/logs && mv /app/inbox/*.log /app/logs/"),
        final("moved the logs (and forgot the draft)"),
    ],
}


def starter_book() -> ScriptBook:
    return ScriptBook(STARTER_SCRIPTS)


def dataset_files(root: Path = DATASET) -> dict[str, str]:
    """The dataset's files as a launch carries them: ``{relative path: text}``."""
    return {
        path.relative_to(root).as_posix(): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
