"""Code generation, scored by running the row's unit tests.

The model completes a Python function from its signature and docstring. The code in
its reply (the fenced block defining the entry point, else the first block, else the
whole reply; a bare body is appended to the prompt) runs with the row's tests and
``check(entry_point)`` in a child interpreter with CPU, memory and time limits; it
passes when that program exits cleanly. The child keeps a hanging or crashing
candidate from taking the scorer (and the other trials in flight) down with it.

Runs in the work sandbox with only the standard library and ``bench_task``.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
from typing import Any

from bench_task import BenchTask

# -- settings: the builtin Driver rewrites this block for its dataset (these fit HumanEval) --
PROMPT_FIELD = "prompt"  # in input: the signature and docstring to complete
ENTRY_POINT_FIELD = "entry_point"  # in expected, else in input
TEST_FIELD = "test"  # in expected, else in input: defines check(candidate)
MAX_TOKENS = 512
TIMEOUT_S = 10.0  # per candidate run
# -- end of settings --

STDERR_TAIL = 2000

INSTRUCTION = (
    "Complete the following Python function. Reply with the complete function, "
    "including its signature, in a single ```python code block.\n\n"
)

# Reasoning models think aloud first; drafts in there are not the answer.
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.I)
_CODE_START = re.compile(r"^(?:def|async\s+def|class|import|from|@)\b", re.M)
_FUTURE = re.compile(r"^from\s+__future__\s+import\s+.*$\n?", re.M)

# Prepended to every program: caps the child's memory, CPU and file sizes so a
# runaway candidate cannot starve the sandbox while the scorer waits on it.
_LIMITS = """\
try:
    import resource as _r
except ImportError:
    _r = None
for _k, _v in ((("RLIMIT_AS", 2 << 30), ("RLIMIT_CPU", {cpu}), ("RLIMIT_FSIZE", 64 << 20))
               if _r is not None else ()):
    try:
        _r.setrlimit(getattr(_r, _k), (_v, _v))
    except (AttributeError, ValueError, OSError):
        pass
del _r
"""


def build_prompt(prompt: str) -> str:
    """The instruction plus the problem's signature and docstring."""
    return f"{INSTRUCTION}```python\n{prompt.rstrip()}\n```\n"


def extract_code(reply: str, entry_point: str) -> str:
    """The code in a model reply: the fenced block defining ``entry_point``, else the
    first fenced block, else the whole reply."""
    blocks: list[str] = _FENCE.findall(reply)
    if not blocks:
        # Unfenced: drop any prose before the code starts.
        start = _CODE_START.search(reply) if _defines(reply, entry_point) else None
        return reply[start.start() :] if start else reply
    defining = [b for b in blocks if _defines(b, entry_point)]
    return (defining or blocks)[0]


def _defines(code: str, entry_point: str) -> bool:
    pattern = rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\("
    return re.search(pattern, code, re.M) is not None


def build_program(code: str, prompt: str | None, entry_point: str, test: str) -> str:
    """The file to execute: the candidate, the problem's tests and ``check(entry_point)``.

    The prompt goes first whenever it is known: it carries the imports and the
    helper functions some problems rely on, and a full function in ``code``
    simply redefines the prompt's docstring-only stub. A bare body is appended
    to the prompt so that it becomes the function's body.
    """
    if not _defines(code, entry_point):
        lines = code.strip("\n").splitlines()
        first = next((line for line in lines if line.strip()), "")
        if first and not first[0].isspace():
            lines = ["    " + line if line.strip() else line for line in lines]
        code = "\n".join(lines) + "\n"
        program = (prompt or "") + code
    else:
        program = (prompt or "") + "\n\n" + code
    # __future__ imports are only legal at the top of the file.
    futures = "".join(m.group().rstrip("\n") + "\n" for m in _FUTURE.finditer(program))
    program = _FUTURE.sub("", program)
    return f"{futures}{program}\n\n{test}\n\ncheck({entry_point})\n"


def run_program(program: str, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """Execute ``program`` in an isolated child interpreter and report how it ended."""
    cpu = int(timeout_s) + 5
    with tempfile.TemporaryDirectory(prefix="humaneval-") as workdir:
        path = os.path.join(workdir, "candidate.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(_with_limits(program, cpu))
        # Only what a plain interpreter needs: the run's model key and proxy
        # address must not be visible to generated code.
        env = {"PATH": os.defpath, "HOME": workdir, "TMPDIR": workdir, "LC_ALL": "C.UTF-8"}
        # stderr goes to a file rather than a pipe: a candidate flooding it
        # cannot deadlock us, and RLIMIT_FSIZE bounds how much it can write.
        with open(os.path.join(workdir, "stderr"), "w+b") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", path],
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
            timed_out = False
            try:
                exit_code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                exit_code = proc.wait()
            finally:
                # Whatever the candidate forked must not outlive the trial.
                _kill_group(proc)
            size = err.seek(0, os.SEEK_END)
            err.seek(max(0, size - STDERR_TAIL))
            tail = err.read().decode("utf-8", errors="replace")
    return {"exit_code": exit_code, "timeout": timed_out, "stderr_tail": tail}


def _with_limits(program: str, cpu: int) -> str:
    # The limits must follow any __future__ imports, which build_program put first.
    futures = re.match(r"(?:from\s+__future__\s+import\s+.*\n)*", program)
    head = futures.group() if futures else ""
    return head + _LIMITS.format(cpu=cpu) + program[len(head) :]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def infer_entry_point(prompt: str | None, code: str) -> str | None:
    """The function to test when the row does not say: the prompt's last ``def``, else
    the candidate's first."""
    for source, pick in ((prompt or "", -1), (code, 0)):
        names = re.findall(r"^(?:async\s+)?def\s+(\w+)\s*\(", source, re.M)
        if names:
            return str(names[pick])
    return None


class Task(BenchTask):
    """Ask for the completed function; pass when the row's tests pass."""

    timeout_s = TIMEOUT_S

    def __init__(self) -> None:
        # index -> input, filled by solve(): score() receives only the reply and the
        # expected value, but needs the prompt's imports and helpers (and maybe the tests).
        self._inputs: dict[int, dict[str, Any]] = {}

    def solve(self, index: int, input: Any) -> str:
        """Ask the model for the completed function."""
        self._inputs[index] = dict(input) if isinstance(input, dict) else {}
        prompt = str(self._inputs[index].get(PROMPT_FIELD, ""))
        return self.complete(build_prompt(prompt), max_tokens=MAX_TOKENS, temperature=0)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the extracted code passes ``check(entry_point)``, else 0.0."""
        row_input = self._input_for(index)
        reference = expected if isinstance(expected, dict) else {}
        prompt = row_input.get(PROMPT_FIELD)
        prompt = str(prompt) if prompt is not None else None
        reply = _THINK.sub("", output or "")
        entry_point = reference.get(ENTRY_POINT_FIELD) or row_input.get(ENTRY_POINT_FIELD)
        entry_point = str(entry_point or infer_entry_point(prompt, reply) or "")
        if not entry_point:
            raise ValueError("the row names no entry point and none can be inferred")
        test = reference.get(TEST_FIELD) or row_input.get(TEST_FIELD)
        if not test:
            raise ValueError(f"the row has no tests under {TEST_FIELD!r}")
        code = extract_code(reply, entry_point)
        program = build_program(code, prompt, entry_point, str(test))
        result = run_program(program, self.timeout_s)
        passed = result["exit_code"] == 0 and not result["timeout"]
        return {"score": 1.0 if passed else 0.0, **result}

    def _input_for(self, index: int) -> dict[str, Any]:
        if index in self._inputs:
            return self._inputs[index]
        # A re-score without solve(): the rows extract() loaded still hold it.
        rows = self._rows
        if rows is not None and 0 <= index < len(rows):
            row_input = rows[index].get("input")
            if isinstance(row_input, dict):
                return row_input
        return {}
