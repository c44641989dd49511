#!/usr/bin/env bash
# The dashboard: install what is needed, build the store on first run, serve on localhost.
# Environment: PORT (default 8501), PLAB_STORE, PLAB_SOURCE_<NAME>, PLAB_GPU=1, PLAB_ADDRESS (default localhost),
# PLAB_MODE=server (sign-in for every page: README "On a lab server"). See README.
set -euo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE  # Python writes each module's bytecode on first import (setup.sh installs without it)
bash scripts/setup.sh
# A network address without sign-in is refused (ui/serve.py says the ways out) before anything is built
.venv/bin/python -m ui.serve check --server.address "${PLAB_ADDRESS:-localhost}"
store=${PLAB_STORE:-data/presupposition_lab.duckdb}
if [ ! -f "$store" ]; then
  echo "Building the store at $store (first run) ..."
  .venv/bin/python -m backend ingest || echo "Some datasets failed to load (see above); the dashboard shows what loaded."
  .venv/bin/python -m backend baselines || echo "The nearest-neighbour baselines could not be built (see above)."
  echo "Building the retrieval indexes (reused when the corpus is unchanged; the first dense index embeds"
  echo "12,892 passages: about 6 minutes on 2 CPU cores) and scoring them on IfQA ..."
  .venv/bin/python -m backend index || echo "The retrieval indexes could not be built (see above)."
fi
# ui.serve refuses a network address without sign-in (PLAB_MODE=server) or the explicit PLAB_UNSAFE_NO_SIGN_IN=1
exec .venv/bin/python -m ui.serve run app.py --server.address "${PLAB_ADDRESS:-localhost}" --server.port "${PORT:-8501}" \
  --server.headless true --browser.gatherUsageStats false --server.maxUploadSize "${PLAB_IMPORT_MAX_MB:-1024}"
