"""Rating tasks: hand out a run's outputs (or a random sample of them) to people with a target overlap k,
each rater served one item at a time that they have not rated and that is still short of k raters
(`store.rating_tasks.claim`), with a guideline, progress per rater and overall, and agreement over the
items that reached overlap. Serves the Rate page; `python -m backend rating-task` creates one.
"""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pandas as pd

from backend.store import rating_tasks as store_tasks
from backend.views import rate

MAX_GUIDELINE = 5000


def create(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    overlap: int,
    guideline: str,
    sample: int | None = None,
    seed: int = 0,
) -> str:
    """A new rating task over the run's outputs (a random `sample` of them, drawn with `seed`, or all),
    served in a shuffled order; returns its id. RatingError names the argument at fault."""
    criteria = rate.criteria_of(con, run_id)  # also refuses an unknown run
    if not isinstance(overlap, int) or isinstance(overlap, bool) or overlap < 1:
        raise rate.RatingError("overlap", f"{overlap!r}; expected a whole number of raters per item, 1 or more")
    if not isinstance(guideline, str) or not guideline.strip() or len(guideline) > MAX_GUIDELINE:
        raise rate.RatingError("guideline", f"expected the raters' instructions, 1 to {MAX_GUIDELINE} characters")
    items = list(rate.targets(con, run_id)["example_id"])
    if sample is not None and not 1 <= sample <= len(items):
        raise rate.RatingError("sample", f"{sample!r}; expected 1 to {len(items):,} (the run's outputs), or all")
    order = np.random.default_rng(seed).permutation(len(items))[: sample or len(items)]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", run_id).strip("-")[:60]
    task_id = f"{slug}-task{len(store_tasks.of_run(con, run_id)) + 1}"
    task = {"task_id": task_id, "run_id": run_id, "criteria": criteria, "overlap": overlap}
    store_tasks.create(con, task | {"guideline": guideline.strip(), "seed": seed}, [items[i] for i in order])
    return task_id


def tasks(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return store_tasks.of_run(con, run_id)


def next_item(con: duckdb.DuckDBPyConnection, task_id: str, rater_id: str) -> str | None:
    """The item to serve this rater now (claimed for them), or None when nothing is left for them."""
    rater = rate.valid_rater(rater_id)
    if store_tasks.task(con, task_id) is None:
        raise rate.RatingError("task", f"no rating task {task_id!r}; the Rate page lists a run's tasks")
    return store_tasks.claim(con, task_id, rater)


def progress(con: duckdb.DuckDBPyConnection, task_id: str) -> dict:
    """Overall (items, complete, with ≥ 2 raters) and per rater (items done)."""
    task = store_tasks.task(con, task_id)
    items = store_tasks.rated_items(con, task_id)
    return {
        "task": task,
        "items": len(items),
        "complete": int((items["raters"] >= task["overlap"]).sum()),
        "overlapping": int((items["raters"] >= 2).sum()),
        "raters": store_tasks.progress(con, task_id),
    }


def agreement(con: duckdb.DuckDBPyConnection, task_id: str) -> pd.DataFrame:
    """`rate.agreement` over the task's items (alpha counts the items with two or more raters)."""
    task = store_tasks.task(con, task_id)
    items = tuple(store_tasks.rated_items(con, task_id)["example_id"])
    return rate.agreement(con, task["run_id"], items)
