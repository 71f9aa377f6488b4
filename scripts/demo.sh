#!/usr/bin/env bash
# The main job: start the embedded platform, launch "Run GSM8K on local/smollm2,
# first 20 problems" in plain English, score SmolLM2 (offline) on each task,
# print the summary and the run's URL, stop the platform.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --model
DATA="${BW_DATA_DIR:-$PWD/.benchwright/demo}"
LIMIT="${LIMIT:-20}"
mkdir -p "$DATA"
READY="$DATA/ready"
rm -f "$READY"
export BW_DATA_DIR="$DATA"
# Prefer free ports: the machine may already run something on the defaults.
export BW_GATEWAY_PORT="${BW_GATEWAY_PORT:-$(.venv/bin/python -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')}"
export BW_PROXY_PORT="${BW_PROXY_PORT:-$(.venv/bin/python -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')}"
BW_READY_FILE="$READY" .venv/bin/benchwright up --data-dir "$DATA" > "$DATA/platform.log" 2>&1 &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  [ -f "$READY" ] && break
  kill -0 $PID 2>/dev/null || { cat "$DATA/platform.log"; exit 1; }
  sleep 0.1
done
[ -f "$READY" ] || { echo "platform did not start"; cat "$DATA/platform.log"; exit 1; }
# A natural-language launch: the builtin Driver finds the benchmark, reads the
# rows, writes and proves a scorer, then the local model is scored on each task.
.venv/bin/benchwright run --driver builtin \
  --request "Run GSM8K on local/smollm2, first $LIMIT problems"
