"""Files copied into every work sandbox: the scorer base class and its runner, the
judge's grading mechanics (``bench_judge``), and the Inspect harness's runner; and
the launchers' shared code, shipped inside them.

The copied files run under the sandbox's interpreter with nothing but the
standard library (``bench_inspect`` adds the harness's mounted libraries), so a
scorer needs no Benchwright install to run.

A launcher (``sandbox_init``, the e2b and sandbox0 ones) is never copied beside
them: it starts the command, so it must not import what the command can rewrite.
``launcher_source`` makes each one a single file, ``command_limits`` inlined.
"""

import ast
from importlib.resources import files
from pathlib import Path

__all__ = ["LIMITS_MODULE", "launcher_source", "runtime_files"]

# What a launcher imports, and ``launcher_source`` puts in its place.
LIMITS_MODULE = f"{__name__}.command_limits"


def runtime_files() -> dict[str, str]:
    """Name -> source text of every file a sandbox needs beside ``task_impl.py``."""
    here = files(__name__)
    names = (
        "bench_task.py",
        "bench_judge.py",
        "bench_runner.py",
        "bench_inspect.py",
        "bench_inspect_evals.py",
    )
    return {name: here.joinpath(name).read_text() for name in names}


def launcher_source(launcher: Path) -> str:
    """The launcher at ``launcher`` as a sandbox runs it: one file, whose one import of
    ``command_limits`` is replaced by that module's code (its docstring and
    ``__future__`` imports aside: the launcher must make the same ones).

    ``ValueError`` when the launcher does not import it so (``from <module> import
    names``, no ``as``, at the top level), or defines a name the module defines too.
    """
    source = launcher.read_text()
    shared = files(__name__).joinpath("command_limits.py").read_text()
    tree, shared_tree = ast.parse(source), ast.parse(shared)
    imports = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == LIMITS_MODULE and node.level == 0
    ]
    if len(imports) != 1 or any(alias.asname for alias in imports[0].names):
        raise ValueError(f"{launcher.name} must import {LIMITS_MODULE} once, without 'as'")
    futures = _futures(shared_tree)
    if not futures <= _futures(tree):
        raise ValueError(f"{launcher.name} must import {sorted(futures)} from __future__")
    defined = _defined(shared_tree)
    missing = {alias.name for alias in imports[0].names} - defined
    if missing:
        raise ValueError(f"{LIMITS_MODULE} has no {', '.join(sorted(missing))}")
    clash = defined & _defined(tree)
    if clash:
        raise ValueError(f"{launcher.name} defines {', '.join(sorted(clash))} again")
    body = [
        node
        for node in shared_tree.body
        if not _is_future(node) and node is not _docstring(shared_tree)
    ]
    lines = source.splitlines(keepends=True)
    code = "".join(shared.splitlines(keepends=True)[body[0].lineno - 1 :])
    start, end = imports[0].lineno - 1, imports[0].end_lineno or imports[0].lineno
    inlined = f"# -- {LIMITS_MODULE}, inlined --\n{code}# -- end of {LIMITS_MODULE} --\n"
    return _without_docstrings("".join(lines[:start]) + inlined + "".join(lines[end:]))


def _without_docstrings(source: str) -> str:
    """``source`` less the lines of its docstrings (the module's, each function's and
    class's): the e2b launcher travels as one argument (at most 128 KiB on Linux) and
    shows in every ``/proc/<pid>/cmdline`` of its sandbox; its readers read the repo."""
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        first = node.body[0] if node.body else None
        if len(node.body) < 2 or first is None or first is not _docstring_of(node.body):
            continue
        start, end = first.lineno - 1, first.end_lineno or first.lineno
        if lines[start].lstrip()[:1] in ("'", '"') and lines[end - 1].rstrip()[-1:] in "'\"":
            drop.update(range(start, end))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def _docstring(tree: ast.Module) -> ast.stmt | None:
    return _docstring_of(tree.body)


def _docstring_of(body: list[ast.stmt]) -> ast.stmt | None:
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first
    return None


def _is_future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def _futures(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            names |= {alias.name for alias in node.names}
    return names


def _defined(tree: ast.Module) -> set[str]:
    """The names a module's top-level statements bind, imports aside."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names
