#!/bin/bash
# Harbor runs this as /tests/test.sh after the agent. Several rewards go to
# /logs/verifier/reward.json; "reward" is the task's score, the others detail it.
mkdir -p /logs/verifier
python3 /tests/check.py > /logs/verifier/reward.json || echo '{"reward": 0}' > /logs/verifier/reward.json
