"""What the Chromium tests share: serving the README's run command, a watched page whose script runs can be
waited for, and the steps a test takes on Streamlit's widgets."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.helpers.net import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Streamlit's script state (stApp's data-test-script-state) and when it or the server last spoke, kept by every
# document a watched page loads: a run the first one starts (a URL value set, a widget filled on mount) begins within
# a few ms of its end (measured: 17 ms), so a page is settled once the state is notRunning and nothing has come from
# the server for QUIET_MS. `runs` counts the server's messages, so a test can wait for the answer to its own click
# (SETTLED alone may read the quiet before the click's run has begun). It counts messages, not the state's turns to
# running: under load React renders a short run's started and finished messages in one go, and the DOM never shows
# 'running' (a CI run waited 60 s for a run that had already ended).
QUIET_MS = 150
WATCH = """{window.__plabRun = {state: null, since: 0, runs: 0};
const plabNative = window.WebSocket;
window.WebSocket = class extends plabNative {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', () => {
      window.__plabRun = {...window.__plabRun, since: performance.now(), runs: window.__plabRun.runs + 1};
    });
  }
};
new MutationObserver(() => {
  const state = document.querySelector('[data-testid=stApp]')?.dataset.testScriptState;
  if (state !== window.__plabRun.state) window.__plabRun = {...window.__plabRun, state, since: performance.now()};
}).observe(document, {subtree: true, childList: true, attributes: true,
             attributeFilter: ['data-test-script-state']});}"""
QUIET = f"window.__plabRun?.state === 'notRunning' && performance.now() - window.__plabRun.since > {QUIET_MS}"
SETTLED = f"() => {QUIET}"
CHARTS_DRAWN = (
    "() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')].every(e => e.querySelector('canvas, svg'))"
)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def serve(env_extra: dict, port: int | None = None):
    """`bash scripts/run.sh` on `port` (a free one by default) until the caller is done: yields its URL."""
    port = port or free_port()
    env = {**os.environ, "PORT": str(port), **env_extra}
    proc = subprocess.Popen(
        ["bash", "scripts/run.sh"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.2)
    try:
        yield f"http://localhost:{port}"
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


SHOTS = ROOT / "data" / "screenshots"


def browser_page(p):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it when run as root)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    return browser, watched(browser.new_page(viewport={"width": 1400, "height": 2400}))


def watched(page):
    """The page, with every document its context loads from now on (a tab a link opens too) keeping the script
    state SETTLED reads."""
    page.context.add_init_script(WATCH)
    return page


def rerun(page, act, timeout: int = 60_000) -> None:
    """Do `act` (a widget change that reruns the script) and wait until its run, and any run it started, ended:
    the next step then acts on the page that run drew, not on one a rerun is about to replace."""
    runs = page.evaluate("() => window.__plabRun.runs")
    act()
    answered(page, runs, timeout)


def answered(page, runs: int, timeout: int = 60_000) -> None:
    """Wait until the server has answered since `runs` was read and the page is quiet again; on a timeout, say what
    the page showed and its script state, so a failure in CI can be read without a screenshot."""
    try:
        page.wait_for_function(f"runs => window.__plabRun.runs > runs && {QUIET}", arg=runs, timeout=timeout)
    except PlaywrightTimeout as exc:
        state = page.evaluate("() => window.__plabRun")
        text = page.inner_text("body")[:2000]
        raise AssertionError(f"no quiet answer after {runs} messages; script state {state}; the page:\n{text}") from exc


def fluency(page, score: int):
    """The Rate page's Fluency radio for `score` (a bare text "0" can be another element on the page)."""
    return page.get_by_role("radiogroup", name="Fluency").get_by_role("radio", name=str(score))


def shows(page, base: str, path: str, proof: str, name: str | None = None) -> None:
    """Open a page, wait for its proof text and drawn charts, save a screenshot, fail on any exception."""
    if path is not None:
        page.goto(f"{base}/{path}", wait_until="domcontentloaded")
    name = name or (path.split("?")[0] or "overview")
    try:
        page.get_by_text(proof).first.wait_for(timeout=90_000)
        page.wait_for_function(CHARTS_DRAWN, timeout=60_000)
    except Exception:
        page.screenshot(path=str(SHOTS / f"{name}-failed.png"), full_page=True)  # to see why
        raise
    page.wait_for_function(SETTLED, timeout=60_000)  # the run, and any run it started, ended: nothing moves
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    assert page.locator("[data-testid='stException']").count() == 0, f"{name}: exception shown"
    assert "Traceback" not in page.inner_text("body"), f"{name}: traceback shown"


def mark(page, kind: str, *fields: str):
    """A chart mark by its Vega aria label ('field: value' pairs), e.g. mark(page, 'bar', 'label: E')."""
    found = page.locator(f"[data-testid=stVegaLiteChart] [aria-roledescription='{kind}']")
    for field in fields:
        found = found.and_(page.locator(f"[aria-label*='{field};'], [aria-label$='{field}']"))  # a whole pair
    return found


def expand(page, title: str) -> None:
    """Open the expander titled `title` and wait for its 500 ms opening animation to end: a selectbox clicked while
    it runs shows no options (seen in three of five local runs)."""
    details = page.locator("[data-testid=stExpander] details").filter(has=page.get_by_text(title)).first
    details.locator("summary").click()
    # a rerun (a fragment refreshing itself) may cancel the animation: its `finished` then rejects, and it is over
    details.evaluate("d => Promise.all(d.getAnimations({subtree: true}).map(a => a.finished.catch(() => null)))")
    assert details.evaluate("d => d.open"), f"{title}: the expander did not open"


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the Streamlit selectbox labelled `label`, and wait for the run the pick starts (none when it
    is already picked). A pick that starts no run within 20 s is looked at again and made again: one CI run left the
    list open with nothing picked, another clicked the option and saw no run for a minute."""
    box = page.locator("[data-testid=stSelectbox]").filter(has=page.get_by_text(label, exact=True)).first
    for _ in range(3):
        if box.locator("input").input_value() == option:
            break
        box.locator("input").click()
        try:
            rerun(page, page.get_by_role("option", name=option, exact=True).first.click, timeout=20_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")  # close a list left open before looking again
    page.wait_for_function(SETTLED, timeout=60_000)
    assert box.locator("input").input_value() == option, f"{label}: {option} was not picked"
