"""A small hostile OpenAI-compatible server for the endpoint tests (issue 45): a real HTTP server on 127.0.0.1 that
answers `/v1/models` and `/v1/chat/completions` the way a broken or busy server would, one misbehaviour at a time:

- `ok`: a well-formed answer ("yes"), with first-token log-probabilities;
- `nan`: log-probabilities NaN, +Infinity and -Infinity;
- `greedy`: usage reporting far more output tokens than max_tokens allowed (`tokens`);
- `invalid`: a body that is not JSON; `truncated`: a Content-Length longer than the body sent;
- `swapped`: another model id in each answer than `/v1/models` lists.

`server.mode` switches it between requests; `server.requests` counts the completions asked for."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "hostile-1"


class Hostile(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.mode, self.requests, self.tokens = "ok", 0, 5_000
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    server: Hostile

    def log_message(self, *args) -> None:  # quiet: the tests read what matters
        pass

    def _send(self, body: bytes, length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "x"}]}).encode())

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with self.server.lock:
            self.server.requests += 1
        mode = self.server.mode
        if mode == "invalid":
            return self._send(b"{this is not json")
        if mode == "truncated":
            body = json.dumps(_answer(asked, MODEL, "yes", (-0.1, -2.5))).encode()
            self._send(body[: len(body) // 2], length=len(body))
            self.close_connection = True
            return None
        logprobs = {"nan": (float("nan"), float("inf"))}.get(mode, (-0.1, -2.5))
        answer = _answer(asked, "another-model" if mode == "swapped" else MODEL, "yes", logprobs)
        if mode == "greedy":
            answer["usage"]["completion_tokens"] = self.server.tokens
        return self._send(json.dumps(answer).encode())  # json writes NaN and Infinity as such, as a broken server does


def _answer(asked: dict, model: str, text: str, logprobs: tuple[float, float]) -> dict:
    top = [
        {"token": "yes", "logprob": logprobs[0], "bytes": None},
        {"token": "no", "logprob": logprobs[1], "bytes": None},
    ]
    first = {"token": text, "logprob": logprobs[0], "bytes": None, "top_logprobs": top}
    return {
        "id": "hostile",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
                "logprobs": {"content": [first]} if asked.get("logprobs") else None,
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
    }


@contextmanager
def hostile():
    """The server, serving in a thread until the block ends."""
    server = Hostile()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
