"""Widgets and guards every page shares."""
from __future__ import annotations

from typing import Any, Callable, Iterable
from urllib.parse import urlencode

import streamlit as st

from backend.store import queries
from ui.resources import StoreLocked, query


def page_url(page: str, **params) -> str:
    """A relative link to a page with its URL parameters (for link columns and markdown links)."""
    return f"{page}?{urlencode(params)}"


def example_links(dataset: str, example_ids: Iterable[str]) -> list[str]:
    """A link to the Example page for each example id."""
    return [page_url("example", dataset=dataset, example=e) for e in example_ids]


def require(fn: Callable, *args, empty: str) -> Any:
    """`query(fn, *args)`, stopping the page with what to do when the store is missing or the result empty."""
    try:
        result = query(fn, *args)
    except (FileNotFoundError, StoreLocked) as exc:
        st.error(f"{exc}. Then reload this page.")
        st.stop()
    if len(result) == 0:
        st.warning(empty)
        st.stop()
    return result


def dataset_select(container=st) -> str:
    """The dataset selectbox (URL parameter `dataset`), over datasets with examples; NOPE first when loaded."""
    loaded = require(queries.loaded_datasets, empty="The store is empty: run `python -m backend ingest` and reload.")
    options = list(loaded.loc[loaded["examples"] > 0, "dataset_id"])
    if not options:
        st.warning("The store holds no examples: run `python -m backend ingest` (see the README) and reload.")
        st.stop()
    return container.selectbox("Dataset", options, index=options.index("nope") if "nope" in options else 0,
                               key="dataset", bind="query-params")
