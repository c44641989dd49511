#!/usr/bin/env bash
# The tests: install what is needed (incl. test requirements), then run the whole suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k nope`.
set -euo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE  # Python writes each module's bytecode on first import (setup.sh installs without it)
# The browser tests drive Debian's chromium (no browser download), the LaTeX tests compile the exports with its
# pdflatex (texlive-latex-recommended: booktabs, longtable, array, pdflscape), the mixed-model tests check mixedlm
# against R's lme4 and lmerTest (r-cran-lme4 r-cran-lmertest, without recommends); install them once where we may,
# with apt working beside pip below (downloads and unpacking overlap; nothing is shared), one after the other (one dpkg).
apt_install() {
  apt-get update -qq >/dev/null 2>&1 || true
  if [ ! -x /usr/bin/chromium ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
      || echo "Could not install chromium: the browser tests will be skipped." >&2
  fi
  if ! command -v pdflatex >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends texlive-latex-recommended \
      >/dev/null 2>&1 || echo "Could not install TeX: the LaTeX tests will be skipped." >&2
  fi
  if ! Rscript -e 'library(lmerTest)' >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends r-cran-lme4 r-cran-lmertest \
      >/dev/null 2>&1 || echo "Could not install R's lme4 and lmerTest: the mixed-model oracle tests will be skipped." >&2
  fi
}
if { [ ! -x /usr/bin/chromium ] || ! command -v pdflatex >/dev/null || ! Rscript -e 'library(lmerTest)' >/dev/null 2>&1; } \
  && [ "$(id -u)" = 0 ] \
  && command -v apt-get >/dev/null; then
  echo "Installing Debian's chromium, TeX and R's lme4 and lmerTest for the browser, LaTeX and mixed-model tests (beside the Python set-up) ..."
  apt_install &
  installing=$!
fi
bash scripts/setup.sh dev
bash scripts/llm_server.sh  # llama.cpp's OpenAI-compatible server, for the endpoint tests (built once, cached by pip)
[ -z "${installing:-}" ] || wait "$installing"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Two workers (pytest-xdist), one test file each at a time: on 2 cores one process used 1.43 of them on average
# (many tests wait on a server, a browser or a subprocess). PLAB_TEST_WORKERS=0 runs in one process.
exec .venv/bin/python -m pytest -n "${PLAB_TEST_WORKERS:-2}" --dist loadfile "$@"
