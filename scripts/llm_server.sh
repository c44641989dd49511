#!/usr/bin/env bash
# llama.cpp's OpenAI-compatible server in its own venv (.venv-llm-server), for the endpoint tests and
# benchmarks; re-installs only when requirements-llm-server.txt changed. The first install builds
# llama-cpp-python from source (about 5 minutes on 2 cores); pip caches the wheel for later installs.
# The CMAKE_ARGS build for any x86-64 CPU: a native build crashes on the first token on AVX-512/AMX Xeons.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv-llm-server/bin/python ] || "$PYTHON" -m venv .venv-llm-server
stamp=.venv-llm-server/.installed
want=$(sha256sum requirements-llm-server.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing llama.cpp's server into .venv-llm-server (the first build takes about 5 minutes) ..."
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    .venv-llm-server/bin/python -m pip install --quiet --disable-pip-version-check --no-compile \
      -r requirements-llm-server.txt 2> >(grep -v "^WARNING: Location" >&2)
  echo "$want" > "$stamp"
fi
