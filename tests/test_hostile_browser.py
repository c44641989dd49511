"""Outside text never becomes a link or an image, proved in Chromium (issue 25).

One server, one browser, a few tabs loading pages at once (each tab its own context, so what a load requested is
its own). Every page is loaded with every URL parameter the README's table lists for it carrying the payloads at
once, then once per parameter the page did not name in that load's notices; then the pages that show stored text
are loaded on a store whose imported dataset and run (texts, ids, labels, facet values, pair roles, model name,
notes, answers), rater ids, saved slice names, live answers and pinned report items carry the payloads. A URL is
loaded once (a page with one parameter has the same URL alone as with all at once): the loads change nothing.
The payloads are a Markdown link and image, a bare URL, a `www.` URL, an angle-bracket autolink, an e-mail address
and raw <a>, <img> and <script>, all pointing at a closed port on 127.0.0.1 (or at a `plab-payload.test` name for
the ones that cannot name a port). After each load the DOM may hold no element whose href / src / … points there,
and the browser may have requested nothing from there. The report's HTML export is loaded in the same browser, and
its Markdown export rendered by a GFM renderer with autolinks (markdown-it-py + linkify), and checked the same way.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import pandas as pd
import pytest

from backend.analysis import pairs, saved_slices
from backend.analysis import ratings as rate
from backend.api import Lab
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.store import writer
from backend.store.access import session
from backend.store.examples import Slice
from backend.store.queries import FACETS
from backend.views import report
from tests.helpers.browser import CHROMIUM, FLAGS, SETTLED, WATCH, serve
from tests.helpers.payloads import GFM, HOST, MAIL_RATER, NAME, PAYLOAD, PAYLOADS, PORT, RATER, autolinkable
from tests.helpers.people import LOCAL

ROOT = Path(__file__).resolve().parent.parent
DATASET = "payload-nli"
IDS = [f"p{i}" for i in range(6)]
# pages loaded at once: each load waits mostly on the server's script run and the quiet after it, so three tabs
# keep the server and Chromium busy where one left them waiting (BENCHMARKS.md, issue 53 item 7)
TABS = 3
# every attribute through which an element can point somewhere, as an absolute URL, in the page and every frame
POINTERS = """() => {
  const names = ['href', 'src', 'srcset', 'action', 'formaction', 'data', 'poster', 'background', 'xlink:href'];
  const absolute = v => {
    try { return new URL(v.trim().split(/\\s+/)[0], document.baseURI).href; } catch { return v; }
  };
  return [...document.querySelectorAll('*')].flatMap(e => names.map(n => e.getAttribute(n))
    .filter(Boolean).map(v => [e.tagName.toLowerCase(), absolute(v)]));
}"""


def outside(target: str) -> bool:
    """Whether a URL points at the payloads' host (the lab's own links may carry payloads in their query)."""
    parts = urlsplit(target)
    if parts.scheme == "mailto":
        return NAME in parts.path
    return parts.netloc == HOST or (parts.hostname or "").endswith(NAME)


def readme_parameters() -> dict[str, list[str]]:
    """Each page's URL parameters as the README's table lists them, keyed by the page's URL path."""
    paths = {
        title: path
        for path, title in re.findall(r'st\.Page\("pages/(\w+)\.py", title="([^"]+)"', (ROOT / "app.py").read_text())
    }
    table = {}
    for title, params in re.findall(r"^\| ([^|]+?) \| [^|]+ \| ([^|]+) \|$", (ROOT / "README.md").read_text(), re.M):
        if title not in paths or paths[title] in table:
            continue  # another table's row, or a later one
        page = paths[title]
        source = (ROOT / "pages" / f"{page}.py").read_text()
        keys = []
        for token in re.findall(r"`([^`]+)`", params):
            if token.startswith("?"):
                continue  # an example link
            token = token.split("=")[0]
            wildcard = rf'"({re.escape(token[:-1])}\w+)"'  # e.g. cell_*: every such key the page names
            keys += sorted(set(re.findall(wildcard, source))) if token.endswith("*") else [token]
        if "Explore's facet parameters" in params:
            keys += list(FACETS)
        table[page] = list(dict.fromkeys(keys))
    assert len(table) == len(paths), f"pages missing from the README's table: {set(paths.values()) - set(table)}"
    return table


def url(page: str, params: dict) -> str:
    return f"{page}?{urlencode(params, quote_via=quote)}" if params else page


@pytest.fixture(scope="module")
def payload_lab(lab, tmp_path_factory) -> dict:
    """The live pages' store and data folder, plus the payloads stored everywhere a user's text is kept."""
    root = tmp_path_factory.mktemp("payload")
    store, data = root / "lab.duckdb", root / "data"
    shutil.copy(lab["store"], store)
    shutil.copytree(lab["data"], data, symlinks=True)
    frame = pd.DataFrame(
        {
            "id": IDS,
            "premise": [f"{PAYLOAD} {i}" for i in range(6)],
            "hypothesis": [PAYLOAD] * 6,
            "label": ["entailment", "neutral"] * 3,
            "verb": [PAYLOAD, "plain"] * 3,
            "pair": ["p1", "p1", "p2", "p2", "p3", "p3"],
            "role": [PAYLOAD, "b"] * 3,
        }
    )
    options = user_datasets.DatasetOptions(
        name=DATASET, task="nli", title=PAYLOAD, columns={"pair_id": "pair", "pair_role": "role"}
    )
    bundle, _ = user_datasets.check(read(frame, name="payload.csv"), options)
    with session(store) as con:
        user_datasets.save(con, bundle)
    lab_api = Lab(store)
    run = lab_api.import_run(
        pd.DataFrame({"id": IDS, "label": ["E", "C"] * 3}), dataset=DATASET, model=f"www.{NAME}", notes=PAYLOAD
    )
    assert run.ok, run.table()
    run_id = f"{DATASET}/user/www.{NAME}"
    live = {
        "run_id": "live/tiny-gen/qa",
        "dataset_id": "live",
        "task": "qa",
        "model_id": "tiny-gen",
        "source": "live",
        "status": "live",
    }
    with session(store) as con:
        assert run_id in set(con.execute("SELECT run_id FROM runs").df()["run_id"])
        writer.store_live(
            con,
            live,
            [
                {
                    "run_id": live["run_id"],
                    "example_id": "payload-q",
                    "answer": PAYLOAD,
                    "text": json.dumps({"input": {"question": PAYLOAD}}),
                }
            ],
        )
        for rater in (RATER, MAIL_RATER):  # imported runs are not rated: the live run is
            rate.save(con, live["run_id"], "payload-q", rater, {"acceptability": 1}, note=PAYLOAD)
        pair_sets = pairs.pair_sets(con)
        slices = [value[:80] for value in PAYLOADS.values()]
        for name in slices:
            saved_slices.save(con, name, Slice(DATASET, (("gold_label", ("E",)),)), note=PAYLOAD)
        table = pd.DataFrame({PAYLOAD: [PAYLOAD, "x"], "n": [1, 2]})
        report.pin(con, "table", PAYLOAD, PAYLOAD, report.table_json(table), "explore", actor=LOCAL)
        items = report.items(con)
    name, note = json.dumps(f"m [x](http://{HOST}/model)"), json.dumps(PAYLOAD)
    with open(data / "registry.local.toml", "a") as registry:  # for ASCII text, a JSON string is a TOML basic string
        registry.write(f'\n[models.{name}]\ntask = "detect"\nload = "local"\npath = "absent"\nquality = {note}\n')
    pair_set = pair_sets.loc[pair_sets["dataset"] == DATASET, "pair_set"].iloc[0]
    return {
        "store": store,
        "data": data,
        "run": run_id,
        "slices": slices,
        "report": items,
        "pairs": pair_set,
        "live": live["run_id"],
    }


@pytest.fixture(scope="module")
def served_payload(payload_lab):
    yield from serve({"PLAB_STORE": str(payload_lab["store"]), "PLAB_DATA_DIR": str(payload_lab["data"])})


class Sweep:
    """One Chromium tab, in a context of its own, that loads pages and collects what pointed at, or reached, the
    payloads' host."""

    def __init__(self, page, base: str):
        self.page, self.base, self.requests = page, base, []
        page.context.on("request", lambda request: self.requests.append(request.url) if outside(request.url) else None)

    @classmethod
    async def open(cls, browser, base: str) -> Sweep:
        context = await browser.new_context(viewport={"width": 1400, "height": 2000})
        await context.add_init_script(WATCH)  # every document keeps the script state SETTLED reads
        return cls(await context.new_page(), base)

    async def load(self, path: str) -> tuple[list[str], str]:
        """What the page at `path` pointed at or requested outside, and the text it showed."""
        await self.page.goto(f"{self.base}/{path}", wait_until="domcontentloaded")
        await self.page.wait_for_function(SETTLED, timeout=120_000)  # after any rerun the first run started, too
        return await self.check(path), await self.shown()

    async def check(self, where: str) -> list[str]:
        pointers = []
        for frame in self.page.frames:
            pointers += await frame.evaluate(POINTERS)
        found = [f"{where[:150]}: <{tag}> → {target}" for tag, target in pointers if outside(target)]
        found += [f"{where[:150]}: requested {r}" for r in self.requests]
        exceptions = await self.page.locator("[data-testid=stException]").count()
        found += [f"{where[:150]}: an exception is shown"] * exceptions
        self.requests.clear()
        return found

    async def shown(self) -> str:
        return await self.page.inner_text("body")


async def load_all(sweeps: list[Sweep], paths: list[str], found: list[str], shown: dict[str, str]) -> None:
    """Each path not loaded yet, once, by whichever tab is free; adds to `found` and `shown`."""
    pending = [path for path in dict.fromkeys(paths) if path not in shown]

    async def work(sweep: Sweep) -> None:
        while pending:
            path = pending.pop(0)
            found_here, shown[path] = await sweep.load(path)
            found.extend(found_here)

    await asyncio.gather(*(work(sweep) for sweep in sweeps))


async def sweep_pages(base: str, stored: list[str], table: dict[str, list[str]], report_items) -> tuple[list, dict]:
    """Load the stored pages and every page with all its parameters' payloads, then the parameters to load alone,
    then the report's exports: (what was found, the text each load showed)."""
    from playwright.async_api import async_playwright

    together = {page: url(page, dict.fromkeys(keys, PAYLOAD)) for page, keys in table.items()}
    found, shown = [], {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        sweeps = [await Sweep.open(browser, base) for _ in range(TABS)]
        await load_all(sweeps, stored + list(together.values()), found, shown)
        # A parameter the page named in its notice with all the payloads at once fell back to its default
        # there as it does alone, and the notice is where its value shows; the others (a widget the payloads
        # kept from rendering, a value read without a widget) are loaded one at a time.
        alone = [
            url(page, {key: PAYLOAD})
            for page, keys in table.items()
            for key in keys
            if f"This link's {key} = " not in shown[together[page]]
        ]
        await load_all(sweeps, alone, found, shown)
        markdown = report.export_markdown(report_items)
        found += [f"report.md: {shape} would be linked" for shape in autolinkable(markdown)]
        exports = (("report.html", report.export_html(report_items)), ("report.md", GFM.render(markdown)))
        for name, exported in exports:
            await sweeps[0].page.set_content(exported, wait_until="load")
            found += await sweeps[0].check(name)
            shown[name] = await sweeps[0].shown()
        await browser.close()
    return found, shown


def test_the_payload_host_is_closed():
    with socket.socket() as probe:
        probe.settimeout(1)
        assert probe.connect_ex(("127.0.0.1", PORT)) != 0, f"something listens on {HOST}: pick another port"


def test_the_readme_lists_url_parameters_the_pages_read():
    table = readme_parameters()
    assert {"rater", "run", "item"} <= set(table["rate"]) and "example" in table["example"]
    assert {"cell_trigger", "cell_label"} <= set(table["nope"]) and "gold_label" in table["map"]


@pytest.mark.slow
def test_no_page_turns_outside_text_into_a_link_or_an_image_in_chromium(served_payload, payload_lab):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it when run as root)")
    started = time.monotonic()
    table = readme_parameters()
    run = payload_lab["run"]
    stored = [
        url("overview", {"board": DATASET}),
        url("explore", {"dataset": DATASET, "run_a": run}),
        url("example", {"dataset": DATASET, "example": IDS[0]}),
        url("pairs", {"pairs": payload_lab["pairs"]}),
        url("slices", {"dataset": DATASET, "run_a": run}),
        url("map", {"dataset": DATASET, "run_a": run}),
        url("rate", {"run": payload_lab["live"], "rater": RATER}),
        url("rate", {"run": payload_lab["live"], "rater": MAIL_RATER}),
        url("playground", {}),
        url("imports", {"run_dataset": DATASET}),
        url("report", {}),
        *[url("explore", {"slice": name}) for name in payload_lab["slices"]],
    ]
    found, shown = asyncio.run(sweep_pages(served_payload, stored, table, payload_lab["report"]))
    assert found == [], "\n".join(f[:400] for f in found[:20])
    refused = [path for path in stored if "is not one of the choices here" in shown[path]]
    assert refused == [], f"stored loads whose ids were not taken (their text was not shown): {refused}"
    # the sweep saw the payloads (as text), so it checked real renderings, not empty pages
    seen = [path for path, text in shown.items() if "Session expired - click here" in text]
    for page in ("explore", "example", "rate", "playground", "report", "report.md", "report.html"):
        assert any(path.startswith(page) for path in seen), f"the payload never showed on {page}"
    assert time.monotonic() - started < 400, "the sweep is meant to stay within about 3 minutes of CI"
