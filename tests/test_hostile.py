"""A hostile or careless lab (issue 12): every page loaded with hostile values in every URL parameter, and
with hostile text stored in a dataset, a run, a live answer and a user-registered model. No page may show a
traceback, render an outside link or image from those values, or change the store. Bounded: one load per
parameter."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from backend.api import Lab
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.store import writer
from backend.store.access import session
from backend.store.queries import FACETS

ROOT = Path(__file__).resolve().parent.parent
EVIL = "evil.example"
LINK = f"[Session expired – click here](https://{EVIL}/login)"
HOSTILE = (
    f"{LINK} ![x](http://{EVIL}/pixel.png) <img src=http://{EVIL}/i.png onerror=alert(1)> "
    f"see http://{EVIL}/x www.{EVIL}/w ' OR 1=1; DROP TABLE ratings; -- ℌ𝔢𝔩𝔩𝔬 \u202e **bold** {{x}} $x$"
)
# an outside link, image or autolink is rendered if, once Markdown's backslash escapes are resolved (as
# remark-gfm resolves them before it links bare URLs), the payload's URL or an unescaped tag is left
RENDERED = re.compile(rf"https?://{re.escape(EVIL)}|www\.|(?<!\\)<img")
ESCAPE = re.compile(r"\\([^\w\s])")
MARKDOWN_FIELDS = {"body", "label", "help", "message"}  # the proto fields Streamlit renders as Markdown
NOT_MARKDOWN = {"Json", "Code", "Text"}  # elements whose body is shown verbatim
EXTRA_KEYS = {
    "explore": list(FACETS) + ["extra.verb"],
    "pairs": ["trigger", "hop"],
    "nope": ["cell_trigger", "cell_polarity", "cell_label", "cell_change", "cell_split", "cell_subset"],
    "projection": ["cell_dataset", "cell_trigger", "cell_operator"],
}
IDS = [f"h{i}" for i in range(5)] + [f"h5-[x](https://{EVIL})"]
PAGES = [
    "overview",
    "explore",
    "slices",
    "map",
    "example",
    "pairs",
    "outputs",
    "nope",
    "projection",
    "retrieval",
    "playground",
    "rate",
    "imports",
]


def url_keys(page: str) -> list[str]:
    """The URL parameters a page binds: each `bind="query-params"` call's key, plus its dynamic ones."""
    source = (ROOT / "pages" / f"{page}.py").read_text() + (ROOT / "ui" / "widgets.py").read_text()
    keys = []
    for bound in re.finditer(r'bind="query-params"', source):
        before = re.findall(r'key="([\w.]+)"', source[max(0, bound.start() - 400) : bound.start()])
        after = re.findall(r'^[^\n]*?key="([\w.]+)"', source[bound.end() : bound.end() + 200])
        keys += (before[-1:] if before else []) + after
    return sorted(set(keys) | set(EXTRA_KEYS.get(page, [])))


@pytest.fixture(scope="module")
def hostile_store(lab, tmp_path_factory) -> Path:
    """The live pages' store with hostile text in a user dataset (texts, ids, facet values, pair roles),
    a user run's model name and a live answer."""
    store = tmp_path_factory.mktemp("hostile") / "lab.duckdb"
    shutil.copy(lab["store"], store)
    frame = pd.DataFrame(
        {
            "id": IDS,
            "premise": [f"{HOSTILE} {i}" for i in range(6)],
            "hypothesis": [HOSTILE] * 6,
            "label": ["entailment", "neutral"] * 3,
            "verb": [HOSTILE, "plain"] * 3,
            "pair": ["p1", "p1", "p2", "p2", "p3", "p3"],
            "role": [f"a {LINK}", "b"] * 3,
        }
    )
    options = user_datasets.DatasetOptions(name="hostile", task="nli", columns={"pair_id": "pair", "pair_role": "role"})
    bundle, _ = user_datasets.check(read(frame, name="hostile.csv"), options)
    with session(store) as con:
        user_datasets.save(con, bundle)
    run = Lab(store).import_run(
        pd.DataFrame({"id": IDS, "label": ["E", "C"] * 3}), dataset="hostile", model=f"m-{EVIL}", notes=HOSTILE
    )
    assert run.ok
    live = {
        "run_id": "live/tiny-gen/qa",
        "dataset_id": "live",
        "task": "qa",
        "model_id": "tiny-gen",
        "source": "live",
        "status": "live",
    }
    with session(store) as con:
        writer.store_live(
            con,
            live,
            [
                {
                    "run_id": live["run_id"],
                    "example_id": "hostile-q",
                    "answer": HOSTILE,
                    "text": json.dumps({"input": {"question": HOSTILE}}),
                }
            ],
        )
    return store


@pytest.fixture(scope="module")
def hostile_data(lab, tmp_path_factory) -> Path:
    """The live pages' data folder plus a user-registered model whose name and quality note are hostile."""
    data = tmp_path_factory.mktemp("hostile-data")
    shutil.copytree(lab["data"], data, symlinks=True, dirs_exist_ok=True)
    name, note = json.dumps(f"m [x](https://{EVIL})"), json.dumps(f"{LINK} ![x](http://{EVIL}/pixel.png)")
    with open(data / "registry.local.toml", "a") as registry:  # for ASCII text, a JSON string is a TOML basic string
        registry.write(f'\n[models.{name}]\ntask = "detect"\nload = "local"\npath = "absent"\nquality = {note}\n')
    return data


def rendered(at) -> list[str]:
    """Every Markdown-rendered string on the page (bodies, labels, help, messages) that shows the payload live."""
    found = []

    def walk(message):
        if message.DESCRIPTOR.name in NOT_MARKDOWN:
            return
        for field, value in message.ListFields():
            if field.type == field.TYPE_MESSAGE:
                for item in value if _repeated(field) else [value]:
                    walk(item)
            elif field.name in MARKDOWN_FIELDS and isinstance(value, str) and RENDERED.search(_resolved(value)):
                found.append(value[:300])

    def nodes(node):
        if getattr(node, "proto", None) is not None:
            walk(node.proto)
        for child in getattr(node, "children", {}).values():
            nodes(child)

    nodes(at._tree)
    return found


def _resolved(markdown: str) -> str:
    """The text Markdown shows (backslash escapes resolved), keeping a lone escaped "<" visible as "\\<"."""
    return ESCAPE.sub(lambda m: "\\<" if m.group(1) == "<" else m.group(1), markdown)


def _repeated(field) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 5.28; `label` before
    return repeated if isinstance(repeated, bool) else field.label == field.LABEL_REPEATED


def counts(store: Path) -> tuple:
    with session(store) as con:
        return tuple(
            con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("datasets", "examples", "runs", "predictions", "ratings", "pairs")
        )


STORED = {  # pages that show the hostile stored text
    "explore": {"dataset": "hostile", "run_a": "hostile/user/m-evil.example"},
    "example": {"dataset": "hostile", "example": "h0"},
    "pairs": {"dataset": "hostile"},
    "rate": {"run": "live/tiny-gen/qa", "rater": "ann"},
    "playground": {},
    "imports": {},
}


@pytest.mark.parametrize("page", PAGES)
def test_hostile_url_values_and_stored_text_render_as_text_and_change_nothing(
    page, hostile_store, hostile_data, open_page, monkeypatch
):
    monkeypatch.setenv("PLAB_DATA_DIR", str(hostile_data))
    before = counts(hostile_store)
    loads = [STORED.get(page, {})] + [{**STORED.get(page, {}), key: HOSTILE} for key in url_keys(page)]
    loads.append(dict.fromkeys(url_keys(page), "A" * 10000))  # every parameter at once, far too long
    assert len(loads) > 2, f"no URL parameters found for {page}"
    for params in loads:
        at = open_page(hostile_store, f"pages/{page}.py", params)
        where = f"{page} with {sorted(params)}"
        assert not at.exception, f"{where}: {at.exception[0].message[:300]}"
        assert not rendered(at), f"{where}: rendered {rendered(at)[:2]}"
    assert counts(hostile_store) == before
