"""Logs moved to /app/logs, the draft renamed, the rest untouched."""

import pathlib
import sys

inbox = pathlib.Path("/app/inbox")
logs = pathlib.Path("/app/logs")
expected_logs = {
    "server.log": "2025-01-02 12:00:01 started\n2025-01-02 12:00:09 stopped\n",
    "access.log": "GET /health 200\nGET /missing 404\n",
}
expected_inbox = {
    "final.md": "# Plan\n\nShip the starter dataset.\n",
    "notes.txt": "keep me\n",
    "catalog.txt": "not a log: catalog\n",
}


def contents(folder: pathlib.Path) -> dict:
    if not folder.is_dir():
        sys.exit(f"{folder} is not a folder")
    return {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}


if contents(logs) != expected_logs:
    sys.exit(f"/app/logs holds {sorted(contents(logs))}, expected {sorted(expected_logs)}")
if contents(inbox) != expected_inbox:
    sys.exit(f"/app/inbox holds {sorted(contents(inbox))}, expected {sorted(expected_inbox)}")
