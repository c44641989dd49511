#!/usr/bin/env bash
# The tests: install what is needed (incl. test requirements), then run the whole suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k nope`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
