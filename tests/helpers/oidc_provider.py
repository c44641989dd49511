"""A real OpenID Connect provider for tests that sign in through Streamlit's own st.login / st.user / st.logout.

`provider()` starts oidc-provider-mock (a Flask app served by uvicorn, from PyPI; test-only) as a subprocess of this
venv on a free port of 127.0.0.1; it accepts any client id, secret and redirect URI, and signs in whatever `sub` its
form is given (claims `{"email": sub}` unless `Provider.user` set others). `secrets_file` writes the `[auth]` section
a Streamlit server reads through its `secrets.files` option (`--secrets.files PATH`, or the environment variable
STREAMLIT_SECRETS_FILES), so a test never touches the checkout's .streamlit/ folder. `sign_in` and `sign_out` drive
a Playwright page through the provider's forms and back to the app.

Pitfalls this module keeps out of the way:
- The browser must open the app at the host of `redirect_uri` (`http://localhost:PORT`, as `secrets_file` writes
  it): Authlib keeps the login's state in a cookie of that host, and a callback that arrives at 127.0.0.1 instead
  finds none ("Missing provider for OAuth callback") and lands back on the app signed out, with no error shown.
- Serve the app with `--server.address localhost` so that http://localhost:PORT answers.
- Streamlit's st.logout goes through the provider's end-session page (its metadata has `end_session_endpoint`);
  `sign_out` confirms it there.
- The provider's pages load their CSS from a CDN: offline they are unstyled and still work.
- After a sign-in Streamlit lands on the app's root URL (its default page), not on the page the button was on.
- Without an `[auth]` section `st.user.is_logged_in` raises AttributeError; a claim the ID token lacks (say
  `email`) raises AttributeError too: `st.user.get("email")` is None then.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.helpers.net import free_port

START_TIMEOUT_S = 30.0  # the provider answers within about a second; a bound, not a wait


class Provider:
    """A running oidc-provider-mock: its base URL, its discovery document's URL, and its users' claims."""

    def __init__(self, url: str, process: subprocess.Popen, log: Path):
        self.url = url
        self.metadata_url = f"{url}/.well-known/openid-configuration"
        self.process = process
        self.log = log

    def user(self, sub: str, **claims: object) -> None:
        """Set the claims the provider puts in `sub`'s ID token from the next sign-in on (`email`, `name`, any
        custom claim), replacing earlier ones; with none, the user has no claim but `sub` (no `email`)."""
        request = urllib.request.Request(
            f"{self.url}/users/{urllib.request.quote(sub, safe='')}",
            data=json.dumps(claims).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            if response.status != 204:
                raise RuntimeError(f"PUT /users/{sub} answered {response.status}: {response.read()[:500]!r}")

    def output(self) -> str:
        """What the provider printed so far (its request log, any traceback)."""
        return self.log.read_text(errors="replace")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200 and b"authorization_endpoint" in response.read()
    except (OSError, urllib.error.URLError):
        return False


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@contextmanager
def provider(timeout: float = START_TIMEOUT_S, attempts: int = 3) -> Iterator[Provider]:
    """Start oidc-provider-mock on a free port of 127.0.0.1 (`python -m oidc_provider_mock --port P`), wait until
    its discovery document answers, yield a `Provider`, and stop it at exit (terminate, then kill). Raises
    RuntimeError, with the process's output, when it does not answer within `timeout` seconds (a port taken in the
    meantime is retried on another, `attempts` times in all)."""
    with tempfile.TemporaryDirectory(prefix="oidc-provider-") as folder:
        failures = []
        for attempt in range(attempts):
            port = free_port()
            log = Path(folder) / f"provider-{attempt}.log"
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    [sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port", str(port)],
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, "NO_COLOR": "1"},
                )
            running = Provider(f"http://127.0.0.1:{port}", process, log)
            try:
                deadline = time.monotonic() + timeout
                while process.poll() is None and time.monotonic() < deadline and not _answers(running.metadata_url):
                    time.sleep(0.1)
                if process.poll() is None and _answers(running.metadata_url):
                    yield running
                    return
                failures.append(f"port {port}, exit code {process.poll()}:\n{running.output()[-3000:]}")
                if process.poll() is None:  # alive but silent: a retry on another port would not help
                    break
            finally:
                _stop(process)
        raise RuntimeError("oidc-provider-mock did not start:\n" + "\n".join(failures))


def secrets_file(folder: Path | str, app_port: int, provider_url: str) -> Path:
    """Write `folder/secrets.toml` with the `[auth]` section that makes st.login sign in at `provider_url` (a
    `Provider.url`) and come back to http://localhost:{app_port}; return its path, for `--secrets.files`."""
    path = Path(folder) / "secrets.toml"
    path.write_text(
        "[auth]\n"
        f'redirect_uri = "http://localhost:{app_port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "presupposition-lab-tests"\n'
        f'client_secret = "{secrets.token_hex(16)}"\n'
        f'server_metadata_url = "{provider_url}/.well-known/openid-configuration"\n'
    )
    return path


AUTHORIZE_PATH = "/oauth2/authorize"
END_SESSION_PATH = "/oauth2/end_session"
USER_COOKIE = "_streamlit_user"  # Streamlit's signed identity cookie (split into _streamlit_user__1, ... when large)
# Streamlit marks its app element with the state of the script run; a page is drawn once a run has ended
SCRIPT_DONE = "() => document.querySelector('[data-testid=stApp]')?.dataset.testScriptState === 'notRunning'"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _back_on(page, origin: str, timeout_ms: int) -> None:
    """Wait until the page is the app at `origin` again (past /oauth2callback) and its script run has ended."""
    page.wait_for_url(
        lambda url: _origin(url) == origin and not urlsplit(url).path.endswith("/oauth2callback"), timeout=timeout_ms
    )
    page.wait_for_function(SCRIPT_DONE, timeout=timeout_ms)


def sign_in(page, sub: str, *, button: str = "Sign in", timeout_ms: int = 30_000) -> None:
    """Sign in as `sub` through the provider's form and wait until the app shows again with its script run ended.

    `page` shows either the app, with a button named `button` whose click calls st.login (the Streamlit app must
    be open at the host of its redirect_uri, http://localhost:PORT), or the provider's form already. Each step waits
    at most `timeout_ms`; a step that times out raises Playwright's TimeoutError naming what it waited for. Raises
    ValueError when the app is open at another host than its redirect_uri's, RuntimeError when the app shows again
    without Streamlit's identity cookie (the provider or the callback refused the sign-in)."""
    started_on = None
    if urlsplit(page.url).path != AUTHORIZE_PATH:
        started_on = _origin(page.url)
        page.get_by_role("button", name=button, exact=True).click(timeout=timeout_ms)
        page.wait_for_url(f"**{AUTHORIZE_PATH}?**", timeout=timeout_ms)
    back_to = _origin(parse_qs(urlsplit(page.url).query)["redirect_uri"][0])
    if started_on not in (None, back_to):
        raise ValueError(f"the app is open at {started_on}, its redirect_uri at {back_to}: open it at {back_to}")
    page.locator('input[name="sub"]').fill(sub, timeout=timeout_ms)
    page.get_by_role("button", name="Authorize", exact=True).click(timeout=timeout_ms)
    _back_on(page, back_to, timeout_ms)
    if not any(c["name"].startswith(USER_COOKIE) for c in page.context.cookies(back_to)):
        raise RuntimeError(f"back on {page.url} without Streamlit's {USER_COOKIE} cookie: the sign-in failed")


def sign_out(page, *, button: str = "Sign out", timeout_ms: int = 30_000) -> None:
    """Click the app's button named `button` (its click calls st.logout), confirm on the provider's end-session page
    when Streamlit goes there, and wait until the app shows again with its script run ended."""
    back_to = _origin(page.url)
    with page.expect_navigation(timeout=timeout_ms):  # to /auth/logout, redirected to the provider or back
        page.get_by_role("button", name=button, exact=True).click(timeout=timeout_ms)
    if urlsplit(page.url).path == END_SESSION_PATH:
        page.get_by_role("button", name="End session", exact=True).click(timeout=timeout_ms)
    _back_on(page, back_to, timeout_ms)
