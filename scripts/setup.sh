#!/usr/bin/env bash
# Create .venv and install the pinned requirements; re-installs only when a requirements file changed.
# Usage: bash scripts/setup.sh [dev]     (dev adds the test requirements)
# --no-compile: pip would compile all ~22,000 installed modules to bytecode (45-75 s on 2 cores); Python compiles
# the ~4,000 a run imports, once, on first import, where writing bytecode is allowed (run.sh and test.sh allow it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "Presupposition Lab needs Python 3.11 or newer (found $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2; exit 1; }
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
files=(requirements.txt requirements-nodeps.txt)
[ "${1:-}" = dev ] && files+=(requirements-dev.txt)
[ "${PLAB_GPU:-0}" = 1 ] && files+=(requirements-gpu.txt)
# One stamp per requirements file, holding its hash: the dashboard's set-up (no dev) finds what the tests' set-up
# (dev) installed, and checks nothing again.
installed() { [ "$(cat ".venv/.installed-$1" 2>/dev/null)" = "$(sha256sum "$1" | cut -d' ' -f1)" ]; }
missing=()
for file in "${files[@]}"; do installed "$file" || missing+=("$file"); done
# faiss on GPU replaced faiss-cpu: a set-up without PLAB_GPU=1 after one with it installs faiss-cpu again
[ "${PLAB_GPU:-0}" = 1 ] || [ ! -e .venv/.installed-requirements-gpu.txt ] || missing+=(requirements-gpu.txt)
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing ${files[*]} into .venv (first run takes a few minutes) ..."
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt \
    $([ "${1:-}" = dev ] && echo "-r requirements-dev.txt") 2> >(grep -v "^WARNING: Location" >&2)
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile --no-deps -r requirements-nodeps.txt \
    2> >(grep -v "^WARNING: Location" >&2)
  if [ "${PLAB_GPU:-0}" = 1 ]; then
    .venv/bin/python -m pip uninstall --quiet -y faiss-cpu
    .venv/bin/python -m pip install --quiet --no-compile -r requirements-gpu.txt
  fi
  rm -f .venv/.installed-*
  for file in "${files[@]}"; do sha256sum "$file" | cut -d' ' -f1 > ".venv/.installed-$file"; done
fi
