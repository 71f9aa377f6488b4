#!/bin/bash
set -euo pipefail
mkdir -p /app/logs
mv /app/inbox/*.log /app/logs/
mv /app/inbox/draft.md /app/inbox/final.md
