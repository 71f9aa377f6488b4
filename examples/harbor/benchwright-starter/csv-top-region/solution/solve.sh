#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from collections import defaultdict

revenue = defaultdict(float)
with open("/app/data/sales.csv", newline="") as rows:
    for row in csv.DictReader(rows):
        revenue[row["region"]] += int(row["units"]) * float(row["unit_price"])
with open("/app/answer.txt", "w") as answer:
    answer.write(max(revenue, key=revenue.__getitem__) + "\n")
PY
