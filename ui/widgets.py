"""Widgets and guards every page shares."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
import streamlit as st

from backend.views import common
from ui import charts, urls
from ui.resources import StoreLocked, query
from ui.text import message, option, plain  # noqa: F401 — pages call widgets.plain, .message and .option


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 pair', '2,732 pairs' (the plural is noun + 's' unless given).

    >>> counted(1, "pair"), counted(2732, "pair"), counted(0, "query", "queries")
    ('1 pair', '2,732 pairs', '0 queries')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def parsed(answers: int, predictions: int) -> str:
    """'5 of 5 answers parsed': how many of a run's predictions are answers (not errors or unreadable responses).

    >>> parsed(0, 5), parsed(1, 1)
    ('0 of 5 answers parsed', '1 of 1 answer parsed')
    """
    return f"{answers:,} of {counted(predictions, 'answer')} parsed"


SHOWN_CHARS = 20_000  # of a model's answer, on a page; the whole answer is stored (the run's row, the export)


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """The first `limit` characters of a long answer, saying how much more the stored answer holds.

    >>> shown("abc", 2)
    'ab… (1 more character in the stored answer)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({counted(len(text) - limit, 'more character')} in the stored answer)"


def streaming(placeholder, limit: int = SHOWN_CHARS, every_s: float = 0.1) -> Callable[[str], None]:
    """An endpoint's answer as it is written, into `placeholder`: at most every `every_s` seconds, and no more than
    `limit` characters (a 2 MB answer would otherwise be re-sent to the browser whole at every piece)."""
    state = {"last": 0.0, "full": False}

    def show(text: str) -> None:
        now = time.monotonic()
        if state["full"] or now - state["last"] < every_s:
            return
        state["last"], state["full"] = now, len(text) > limit
        placeholder.text(shown(text, limit))

    return show


def example_links(dataset: str, example_ids: Iterable[str]) -> list[str]:
    """A link to the Example page for each example id."""
    return [urls.page_url("example", dataset=dataset, example=e) for e in example_ids]


def linked_items(dataset: str, fn: Callable, *args, **kwargs):
    """`query(fn, ...)`'s items with an `open` link to the Example page first; None, after saying why,
    when the chosen cell is unusable (the function's ValueError) or empty."""
    try:
        frame = query(fn, *args, **kwargs)
    except ValueError as exc:
        st.info(f"Pick another cell to list its items ({message(exc)}).")
        return None
    if frame.empty:
        st.info("No items in this cell: pick another one.")
        return None
    return with_links(dataset, frame)


def with_links(dataset: str, frame: pd.DataFrame) -> pd.DataFrame:
    """The items with an `open` link to the Example page as their first column."""
    frame = frame.assign(open=example_links(dataset, frame["example_id"]))
    return frame[["open", *[c for c in frame.columns if c != "open"]]]


def generated_from(dataset: str) -> str:
    """Say what a generated dataset was generated from (template or facts, with the SHA-256 of what was
    read) under the page's heading; return the dataset's name with that origin for export captions."""
    origin = query(common.origin, dataset)
    if not origin.get("generated"):
        return dataset
    st.caption(f":material/science: {plain(dataset)} was {plain(origin['generated'])} (the Overview shows it in full).")
    return f"{dataset} ({origin['generated']})"


def label_badge(label) -> str:
    """A label as a Streamlit badge in its colour (E blue, N grey, C/FP orange), or '—'."""
    return f":{charts.BADGES.get(label, 'violet')}-badge[{plain(label)}]" if label else "—"


def passage_markdown(row, limit: int = 600) -> str:
    """One retrieved or gold passage (a row with title, text and maybe gold) as a markdown line."""
    gold = " :orange-badge[gold]" if getattr(row, "gold", False) else ""
    title = f"*{plain(row.title)}* — " if isinstance(row.title, str) and row.title else ""
    text = row.text if isinstance(row.text, str) else "(passage text not in the store)"
    return f"{title}{plain(text[:limit])}{'…' if len(text) > limit else ''}{gold}"


def require(fn: Callable, *args, empty: str) -> Any:
    """`query(fn, *args)`, stopping the page with what to do when the store is missing or the result empty."""
    try:
        result = query(fn, *args)
    except (FileNotFoundError, StoreLocked) as exc:
        st.error(f"{message(exc)}. Then reload this page.")
        urls.stop()
    if len(result) == 0:
        st.warning(empty)
        urls.stop()
    return result


def loaded_dataset_ids() -> list[str]:
    """The ids of the datasets in the store."""
    return list(query(common.loaded_datasets)["dataset_id"])


def dataset_select(container=st) -> str:
    """The dataset selectbox (URL parameter `dataset`), over datasets with examples; NOPE first when loaded."""
    loaded = require(common.loaded_datasets, empty="The store is empty: run `python -m backend ingest` and reload.")
    options = list(loaded.loc[loaded["examples"] > 0, "dataset_id"])
    if not options:
        st.warning("The store holds no examples: run `python -m backend ingest` (see the README) and reload.")
        urls.stop()
    return container.selectbox(
        "Dataset", options, index=options.index("nope") if "nope" in options else 0, key="dataset", bind="query-params"
    )


TQDM = re.compile(r"(\d[\d,]*)/(\d[\d,]*) \[[^<\]]*<([^,\]]+)")  # "1230/2732 [00:10<00:12" in a tqdm line


def job_progress(what: str, line: str) -> None:
    """A background job's progress: a bar with the count and time left when its last log line is a tqdm bar,
    else the line itself."""
    found = TQDM.search(line or "")
    if found:
        done, total = (int(n.replace(",", "")) for n in found.groups()[:2])
        st.progress(
            min(done / max(total, 1), 1.0), text=f"{plain(what)}: {done:,} of {total:,}, {plain(found[3])} left"
        )
    else:
        st.info(f"{plain(what)}… {plain(line)}", icon=":material/hourglass:")


def pooled(chosen: list[str], headline: str | None) -> None:
    """Under a split picker: say so when the page pools several splits (none chosen: every split)."""
    if len(chosen) != 1:
        st.caption(
            f"Pooled over {'every split' if not chosen else ', '.join(map(plain, chosen))}: the paper reports each "
            f"split apart{f' (headline: {plain(headline)})' if headline else ''}."
        )


SHOWN_VERDICTS = 3  # badges listed beside a model's outputs; the model card lists them all
BADGES = {
    common.BELOW: ":red-badge[:material/trending_down: below baseline]",
    common.NOT_DIFFERENT: ":orange-badge[:material/trending_flat: not different from baseline]",
    common.ABOVE: ":green-badge[:material/trending_up: above baseline]",
    common.NO_BASELINE: ":gray-badge[:material/remove: no trivial baseline]",
}


def worth(
    dataset: str | None, runs: Iterable[str] = (), model: str | None = None, splits: Iterable[str] | None = None
) -> None:
    """A "below baseline" or "not different from baseline" badge, with the figures behind it, for each of these runs
    (or each run of `model`) whose headline metric on `dataset` (None: any) and on `splits` (the splits the page
    shows; None: any) does not beat its best trivial baseline (`backend.views.cards`); nothing for the others."""
    splits = None if splits is None else tuple(splits)
    flagged = common.of(query(common.verdicts, dataset), dataset, tuple(runs), model, splits)
    for row in flagged.head(SHOWN_VERDICTS).itertuples():
        badge = BADGES[row.verdict]
        st.markdown(
            f"{badge} {plain(row.run)}: {plain(row.figures)} · [model card]({urls.page_url('cards', model=row.model)})",
            help=common.RULE,
        )
    if len(flagged) > SHOWN_VERDICTS:
        models = ", ".join(f"[{plain(m)}]({urls.page_url('cards', model=m)})" for m in flagged["model"].unique())
        st.markdown(f"…and {len(flagged) - SHOWN_VERDICTS:,} more runs with a verdict: see the model card ({models}).")
