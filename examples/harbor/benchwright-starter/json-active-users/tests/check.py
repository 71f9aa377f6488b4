"""Prints the rewards as JSON: the score and which parts of the output are right."""

import json

with open("/tests/users.json") as source:
    users = json.load(source)
expected = sorted(
    ({"name": u["name"], "email": u["email"]} for u in users if u["active"] is True),
    key=lambda u: u["name"],
)

try:
    with open("/app/active_users.json") as output:
        given = json.load(output)
except (OSError, ValueError):
    given = None

right_records = isinstance(given, list) and sorted(map(json.dumps, given)) == sorted(
    map(json.dumps, expected)
)
right_order = given == expected
print(
    json.dumps(
        {
            "reward": 1 if right_order else 0,
            "records": 1 if right_records else 0,
            "order": 1 if right_order else 0,
        }
    )
)
