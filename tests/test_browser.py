"""Every page in a real browser: the README's run command serves the app, headless Chromium
(Debian's /usr/bin/chromium, driven by Playwright) opens each page, saves a screenshot under
data/screenshots/ and fails on any exception shown."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.test_app import free_port

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# (URL path, text near the end of the page that proves it rendered everything)
PAGES = [("", "Models"), ("explore?dataset=nope&run_a=nope/baseline/always-E", "select a row to open it"),
         ("example?dataset=nope&example=1", "Pair partners"), ("pairs", "Struck-through words"),
         ("nope", "Items behind a bar")]
CHARTS_DRAWN = ("() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')]"
                ".every(e => e.querySelector('canvas, svg'))")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


@pytest.fixture()
def served(real_store):
    port = free_port()
    env = {**os.environ, "PORT": str(port), "PLAB_STORE": str(real_store)}
    proc = subprocess.Popen(["bash", "scripts/run.sh"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(1)
    yield f"http://localhost:{port}"
    os.killpg(proc.pid, 15)
    proc.wait(timeout=30)


@pytest.mark.slow
def test_every_page_renders_in_chromium(served):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it when run as root)")
    from playwright.sync_api import sync_playwright

    shots = ROOT / "data" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        for path, proof in PAGES:
            page.goto(f"{served}/{path}", wait_until="domcontentloaded")
            page.get_by_text(proof).first.wait_for(timeout=90_000)
            page.wait_for_function(CHARTS_DRAWN, timeout=60_000)
            page.wait_for_timeout(1000)  # let the last elements settle before the screenshot
            name = (path.split("?")[0] or "overview")
            page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
            assert page.locator("[data-testid='stException']").count() == 0, f"{name}: exception shown"
            assert "Traceback" not in page.inner_text("body"), f"{name}: traceback shown"
        browser.close()
