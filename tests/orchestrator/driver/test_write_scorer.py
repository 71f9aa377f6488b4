"""write_scorer: deterministic, guidance recorded verbatim, valid and lint-clean Python."""

import dataclasses
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from benchwright_orchestrator.driver.builtin import KINDS, analyze_rows, write_scorer
from tests.orchestrator.driver.conftest import ROOT, Loader, analysis_for
from tests.orchestrator.driver.data import BFCL_ROWS, ROWS_BY_KIND

TRICKY_GUIDANCE = (
    'Compare the calls order-sensitive; max_tokens 300.  \n\tA """quoted""" line with a \\ '
    "backslash, a tab\there, an \x07 bell, caf\u00e9 and a line long enough to go well past the "
    "hundred-character limit that the linter puts on every line of this repository.\n"
    + "\\" * 45
    + '"""' * 10
    + "x" * 50
    + "\\\n"
    'Ends with a quote"'
)


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_write_scorer_is_deterministic(kind: str) -> None:
    first = write_scorer(analysis_for(kind))
    again = write_scorer(analyze_rows(json.loads(json.dumps(ROWS_BY_KIND[kind]))))
    assert first == again
    assert write_scorer(analysis_for(kind), "be strict") == write_scorer(
        analysis_for(kind), "be strict"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_guidance_changes_the_code_and_is_kept_verbatim(kind: str, load_scorer: Loader) -> None:
    plain = write_scorer(analysis_for(kind))
    guided = write_scorer(analysis_for(kind), TRICKY_GUIDANCE)
    assert plain != guided
    assert "Guidance: none." in (load_scorer(plain).__doc__ or "")
    doc = load_scorer(guided).__doc__ or ""
    assert "\n" + TRICKY_GUIDANCE + "\n" in doc
    # Any change at all to the guidance is a new scorer, hence a new impl id.
    assert write_scorer(analysis_for(kind), TRICKY_GUIDANCE + ".") != guided


def test_the_docstring_says_what_was_recognised() -> None:
    code = write_scorer(
        analysis_for("function_call"), "Compare calls in the same order. max_tokens 64"
    )
    assert "Directives acted on: order sensitive: on; max tokens: 64." in code
    assert "ORDER_SENSITIVE = True" in code and "MAX_TOKENS = 64" in code
    code = write_scorer(analysis_for("math"), "Compare calls in the same order.")
    assert "Directives acted on: none recognised for this kind." in code
    assert "Rows (sampled schema):\n    expected: string\n    input: object\n" in code


def test_write_scorer_rejects_a_kind_the_fields_do_not_fit() -> None:
    wrong_kind = dataclasses.replace(analysis_for("math"), kind="multiple_choice")
    with pytest.raises(ValueError, match="needs the dataset's choices field"):
        write_scorer(wrong_kind)


def _write_all(directory: Path) -> list[Path]:
    shutil.copy(
        ROOT / "services/sandbox-manager/benchwright_sandbox_manager/runtime/bench_task.py",
        directory,
    )
    paths = []
    for kind in KINDS:
        for n, guidance in enumerate((None, TRICKY_GUIDANCE)):
            path = directory / f"{kind}_{n}.py"
            path.write_text(write_scorer(analysis_for(kind), guidance), encoding="utf-8")
            paths.append(path)
    return paths


def test_generated_scorers_are_lint_clean_and_formatted(tmp_path: Path) -> None:
    paths = [str(p) for p in _write_all(tmp_path)]
    config = str(ROOT / "pyproject.toml")
    # Python 3.10 is the oldest interpreter a sandbox may have.
    check = [_tool("ruff"), "check", "--config", config, "--target-version", "py310", *paths]
    result = subprocess.run(check, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    result = subprocess.run(
        [_tool("ruff"), "format", "--config", config, "--check", *paths],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_generated_scorers_type_check_strictly(tmp_path: Path) -> None:
    paths = [str(p) for p in _write_all(tmp_path) if p.name != "bench_task.py"]
    result = subprocess.run(
        [_tool("mypy"), "--strict", "--config-file", "/dev/null", "--python-version", "3.10",
         "--cache-dir", str(tmp_path / ".mypy_cache"), *paths],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"MYPYPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


# -- in a child interpreter, over HTTP, the way a sandbox runs it ------------------


class _FakeModel(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        call = {
            "name": "spotify_play",
            "arguments": json.dumps({"artist": "Maroon 5", "duration": 15}),
        }
        other = {"name": "spotify_play", "arguments": '{"artist": "Taylor Swift", "duration": 20}'}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": call},
                {"id": "b", "type": "function", "function": other},
            ],
        }
        raw = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake_model_url() -> Iterator[str]:
    _FakeModel.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


RUN = """
import json, sys
import task_impl
row = json.loads(sys.stdin.read())
task = task_impl.Task()
output = task.solve(0, row["input"])
print(json.dumps({"output": output, "scored": task.score(0, output, row["expected"])}))
"""


def test_function_call_scorer_in_a_child_interpreter(
    sandbox_dir: Path, fake_model_url: str
) -> None:
    (sandbox_dir / "task_impl.py").write_text(write_scorer(analysis_for("function_call")))
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(sandbox_dir)!r})\n{RUN}",
        ],
        input=json.dumps(BFCL_ROWS[2]),
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "BW_MODEL_PROXY_URL": fake_model_url,
            "BW_MODEL_MODEL": "fake",
            "PATH": "/usr/bin:/bin",
        },
    )
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["scored"]["score"] == 1.0, reply
    assert json.loads(reply["output"]) == [
        {"spotify.play": {"artist": "Maroon 5", "duration": 15}},
        {"spotify.play": {"artist": "Taylor Swift", "duration": 20}},
    ]
    (body,) = _FakeModel.bodies
    assert body["model"] == "fake" and body["temperature"] == 0
    assert body["tools"][0]["function"]["name"] == "spotify_play"
    assert body["tools"][0]["function"]["parameters"]["properties"]["duration"] == {
        "type": "integer"
    }
