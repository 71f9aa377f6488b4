"""The run report: one self-contained HTML page, escaped everywhere, no scripts."""

from html import escape
from typing import Any

from benchwright_gateway.render import with_interval

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;color:#222}
h1{font-size:1.4rem}table{border-collapse:collapse;width:100%;margin:1rem 0}
td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.pass{color:#1a7f37}.fail{color:#9a6700}.err{color:#cf222e}.running{color:#0a7ea4}
code{font-size:12px}.muted{color:#666}
"""


def _cell(value: Any) -> str:
    return escape("" if value is None else str(value))


def _money(cost: dict[str, Any] | None, key: str) -> str:
    found = (cost or {}).get(key) or {}
    return f"${found.get('amount_usd', 0):.4f}" if isinstance(found, dict) else _cell(found)


def _outcome(task: dict[str, Any]) -> str:
    return _cell(task.get("outcome") or "running")


def render_report(run: dict[str, Any], tasks: list[dict[str, Any]]) -> str:
    summary = run.get("summary") or {}
    model = run.get("model") or {}
    benchmark = run.get("benchmark") or {}
    cost = run.get("cost")
    facts = [
        ("Run", run["id"]),
        ("Status", run.get("display_status") or run.get("status")),
        ("Benchmark", f"{benchmark.get('name') or ''} ({benchmark.get('id') or '-'})"),
        ("Subset", (run.get("subset") or {}).get("slug")),
        ("Scorer (impl)", run.get("impl_id")),
        ("Model", f"{model.get('provider', '')}/{model.get('model', '')}"),
        ("Backend", run.get("backend")),
        ("Passed", f"{summary.get('passed', 0)} / {summary.get('total', 0)}"),
        ("Pass rate", with_interval(summary, "pass_rate", "{:.1%}")),
        ("Mean score", with_interval(summary, "mean_score", "{:.3f}")),
        ("Cost (incurred)", _money(cost, "incurred")),
        ("Fingerprint", run.get("fingerprint")),
        ("Started", run.get("created_at")),
        ("Finished", run.get("finished_at")),
    ]
    rows = "".join(f"<tr><th>{_cell(k)}</th><td>{_cell(v)}</td></tr>" for k, v in facts)
    task_rows = "".join(
        "<tr>"
        f"<td>{_cell(t['idx'])}</td><td><code>{_cell(t['task_id'])}</code></td>"
        f"<td class='{_outcome(t)}'>{_outcome(t)}</td>"
        f"<td>{_cell(t.get('score'))}</td><td>{_cell(t.get('error_type'))}</td>"
        f"<td>{_cell(t.get('duration_ms'))}</td>"
        "</tr>"
        for t in tasks
    )
    title = f"Benchwright run {run['id']}"
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_cell(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{_cell(title)}</h1><table>{rows}</table>"
        "<h2>Tasks</h2><table><tr><th>#</th><th>task</th><th>outcome</th><th>score</th>"
        f"<th>error</th><th>ms</th></tr>{task_rows}</table>"
        "<p class='muted'>Generated from the run's event log.</p></body></html>"
    )
