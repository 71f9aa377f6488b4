"""The greeting file holds exactly the line asked for."""

import pathlib
import sys

path = pathlib.Path("/app/greeting.txt")
if not path.is_file():
    sys.exit(f"{path} does not exist")
if path.read_bytes() != b"Hello from Benchwright!\n":
    sys.exit(f"{path} holds {path.read_bytes()[:200]!r}")
