"""Pages from Jinja2 templates: every value escaped, every answer with the strict headers.

Templates and static files ship inside the package (no CDN, no Node build): a page
names an asset through ``asset()``, which adds a hash of its bytes so a browser
never keeps a stale copy after an upgrade.
"""

import hashlib
import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from benchwright_gateway.web.sessions import SECURITY_HEADERS

STATIC_DIR = Path(__file__).parent / "static"


@cache
def asset(name: str) -> str:
    """The URL of a static file, versioned by its content."""
    digest = hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:12]
    return f"/static/{name}?v={digest}"


def usd(amount: Any, digits: int = 4) -> str:
    """A dollar figure from an API money object or a bare amount; ``-`` when absent."""
    if isinstance(amount, dict):
        amount = amount.get("amount_usd")
    if amount is None:
        return "-"
    return f"${float(amount):,.{digits}f}"


def percent(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1%}"


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """How long ago an ISO time was, in the largest unit that fits."""
    if not timestamp:
        return "-"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return timestamp
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def duration(ms: Any) -> str:
    if ms is None:
        return "-"
    seconds = int(ms) / 1000
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


def pretty_json(value: Any) -> str:
    """Structured values shown as indented JSON text (escaped like any other text)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("benchwright_gateway.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["asset"] = asset
    env.filters.update(
        usd=usd, percent=percent, age=age, duration=duration, pretty=pretty_json,
    )  # fmt: skip
    return env


def page(request: Request, template: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    """A rendered page with the security headers (CSP, no framing, no sniffing)."""
    html = environment().get_template(template).render(request_path=request.url.path, **values)
    return HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)
