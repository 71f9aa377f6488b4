#!/usr/bin/env bash
# Print the path of a Python >= 3.12 that really runs (pyenv shims can exist and fail).
set -u
try() {
  local out
  out=$("$@" -c 'import sys; assert sys.version_info >= (3, 12); print(sys.executable)' 2>/dev/null) && { echo "$out"; exit 0; }
}
try python3.12
for v in $(ls "${PYENV_ROOT:-$HOME/.pyenv}/versions" 2>/dev/null | grep -E '^3\.(1[2-9])' | sort -V); do
  PYENV_VERSION=$v try python3.12
  PYENV_VERSION=$v try "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v/bin/python3"
done
try python3.13
try python3
echo "no Python >= 3.12 found: install one (pyenv install 3.12) and retry" >&2
exit 1
