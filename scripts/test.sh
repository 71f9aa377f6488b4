#!/usr/bin/env bash
# The test suite. Uses this machine's NATS (127.0.0.1:4222) and PostgreSQL
# (127.0.0.1:5432, database test) when they answer, besides the private
# nats-server and SQLite every run uses.
set -euo pipefail
cd "$(dirname "$0")/.."
# The local model too: a test runs a real completion in its worker process; and
# Chromium, which the dashboard's browser tests drive.
scripts/bootstrap.sh --model --browser
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if [ -z "${BW_TEST_NATS_URL:-}" ] && port_open 4222; then
  export BW_TEST_NATS_URL="nats://127.0.0.1:4222"
fi
if [ -z "${BW_TEST_DATABASE_URL:-}" ] && port_open 5432; then
  export BW_TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/test"
fi
echo "NATS: ${BW_TEST_NATS_URL:-private only}   PostgreSQL: ${BW_TEST_DATABASE_URL:-SQLite only}"
.venv/bin/ruff check shared services sdk runtime tests bench
.venv/bin/lint-imports --no-cache > /dev/null
.venv/bin/mypy
# Scorers are checked where they run: beside the sandbox runtime's bench_task, on the
# oldest Python a sandbox may have.
MYPYPATH=services/sandbox-manager/benchwright_sandbox_manager/runtime \
  .venv/bin/mypy --strict --config-file /dev/null --python-version 3.10 \
  shared/benchwright_shared/scorers/[!_]*.py
# Most tests wait on sockets and subprocesses, so more workers than cores pay off;
# tests/conftest.py keeps the ones that share the machine's NATS on one worker.
exec .venv/bin/pytest -n "${BW_TEST_WORKERS:-4}" --dist loadgroup "$@"
