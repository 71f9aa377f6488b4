"""answer.txt names the region with the highest revenue, worked out from the CSV."""

import csv
import pathlib
import sys
from collections import defaultdict

revenue: dict[str, float] = defaultdict(float)
with open("/tests/sales.csv", newline="") as rows:
    for row in csv.DictReader(rows):
        revenue[row["region"]] += int(row["units"]) * float(row["unit_price"])
expected = max(revenue, key=revenue.__getitem__)

answer = pathlib.Path("/app/answer.txt")
if not answer.is_file():
    sys.exit("/app/answer.txt does not exist")
given = answer.read_text().strip()
if given != expected:
    sys.exit(f"answer {given!r}, expected {expected!r}")
