#!/usr/bin/env bash
# lm-evaluation-harness and Inspect AI in their own venv (.venv-harness), for running exported tasks and for the
# tests that load them with each harness's own loader (they are skipped without it). Re-installs only when
# requirements-harnesses.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv-harness/bin/python ] || "$PYTHON" -m venv .venv-harness
stamp=.venv-harness/.installed
want=$(sha256sum requirements-harnesses.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing lm-evaluation-harness and Inspect AI into .venv-harness (a few minutes) ..."
  .venv-harness/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-harnesses.txt \
    2> >(grep -v "^WARNING: Location" >&2)
  echo "$want" > "$stamp"
fi
