#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json

with open("/app/users.json") as source:
    users = json.load(source)
active = [{"name": u["name"], "email": u["email"]} for u in users if u["active"] is True]
with open("/app/active_users.json", "w") as output:
    json.dump(sorted(active, key=lambda u: u["name"]), output, indent=2)
PY
