#!/bin/bash
# Harbor runs this as /tests/test.sh after the agent; the reward goes to /logs/verifier.
mkdir -p /logs/verifier
if python3 /tests/check.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
