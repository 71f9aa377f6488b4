#!/bin/bash
set -euo pipefail
printf 'Hello from Benchwright!\n' > /app/greeting.txt
