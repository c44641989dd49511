"""llama.cpp's OpenAI-compatible server serving SmolLM2, registered as an endpoint model (`models add`) in a
data folder of its own, beside a copy of the real store: what the endpoint and judge tests run against."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from backend.cli.main import main as cli
from backend.models import loading
from benchmarks import llama_server

CANARY = f"sk-canary-{uuid.uuid4().hex}"  # the server's key: it must never be written anywhere
KEY_ENV = "PLAB_TEST_LLM_KEY"
NAME = "llama-smol"


@contextmanager
def serving(real_store: Path, root: Path):
    """The server, a data folder whose registry names it, a copy of the real store: {server, data, store}."""
    if not llama_server.SERVER_PYTHON.is_file():
        pytest.fail("llama.cpp's server is not installed: run `bash scripts/llm_server.sh` (scripts/test.sh does)")
    server = llama_server.Server(root / "server.log", CANARY)
    server.start()
    data, store = root / "data", root / "lab.duckdb"
    data.mkdir()
    store.write_bytes(real_store.read_bytes())
    added = ["models", "add", NAME, "--base-url", server.url, "--model", "smollm2", "--api-key-env", KEY_ENV]
    limits = ["--max-concurrency", "2", "--timeout-s", "30", "--price-in", "0.5", "--price-out", "1.5"]
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("PLAB_DATA_DIR", str(data))
            patch.setenv(KEY_ENV, CANARY)
            assert cli(added + limits) == 0
            yield {"server": server, "data": data, "store": store}
            loading.unload(NAME)
    finally:
        if server.process.poll() is None:
            server.stop()
