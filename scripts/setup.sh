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
stamp=.venv/.installed-$(IFS=_; echo "${files[*]}" | tr -c 'a-z_\n' '-')
want=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing ${files[*]} into .venv (first run takes a few minutes) ..."
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt \
    $([ "${1:-}" = dev ] && echo "-r requirements-dev.txt") 2> >(grep -v "^WARNING: Location" >&2)
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile --no-deps \
    -r requirements-nodeps.txt \
    2> >(grep -v "^WARNING: Location" >&2)
  if [ "${PLAB_GPU:-0}" = 1 ]; then
    .venv/bin/python -m pip uninstall --quiet -y faiss-cpu
    .venv/bin/python -m pip install --quiet --no-compile -r requirements-gpu.txt
  fi
  echo "$want" > "$stamp"
fi
