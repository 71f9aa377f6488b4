"""Write the gateway's OpenAPI document as JSON, without starting the platform.

    .venv/bin/python scripts/openapi.py [OUT]     # OUT: a file, or stdout when absent

The gateway's FastAPI app is assembled in a throwaway data directory (its stores are
SQLite files there; nothing listens and no bus is reached), and the document is the
one ``/openapi.json`` serves. ``sdk-ts`` generates its types from it
(``npm run generate``).
"""

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchwright_gateway.app import GatewayService
from benchwright_shared.settings import Settings


def openapi_document() -> dict[str, Any]:
    """The document ``GET /openapi.json`` answers, built from the app object alone."""
    with tempfile.TemporaryDirectory(prefix="bw-openapi-") as data_dir:
        root = Path(data_dir)
        settings = Settings(data_dir=root / "data", cache_dir=root / "cache")
        gateway = GatewayService(settings)
        try:
            return gateway.http.openapi()
        finally:
            gateway.views.close()
            gateway.app.close()


def render(document: dict[str, Any]) -> str:
    """The document as committed: stable indentation and a final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(openapi_document())
    if len(argv) > 1:
        Path(argv[1]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
