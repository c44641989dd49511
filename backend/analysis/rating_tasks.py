"""Rating tasks: hand out a run's outputs (or a random sample of them) to people with a target overlap k,
each rater served one item at a time that they have not rated and that is still short of k raters
(`store.rating_tasks.claim`), with a guideline, progress per rater and overall, and agreement over the
items that reached overlap. Serves the Rate page; `python -m backend rating-task` creates one.

What reaches a rater is blinded: a new task's id is random (`task-` and 16 hex digits), so the link's claims and
the page name no run, model, dataset or split; the rater's page names the task and its items only by handles
(`identity.links.handle`: HMAC-SHA256 keyed with the server's link secret), never by their ids. Tasks made before
keep their ids. Who may create, rate and link: `actions.ratings`.
"""

from __future__ import annotations

import secrets

import duckdb
import numpy as np
import pandas as pd

from backend.analysis import ratings
from backend.store import links as store_links
from backend.store import rating_tasks as store_tasks

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
    served in a shuffled order; returns its id. RatingError names the argument at fault. As a person's act:
    `actions.ratings.create_task`."""
    criteria = ratings.criteria_of(con, run_id)  # also refuses an unknown run
    if not isinstance(overlap, int) or isinstance(overlap, bool) or overlap < 1:
        raise ratings.RatingError("overlap", f"{overlap!r}; expected a whole number of raters per item, 1 or more")
    if not isinstance(guideline, str) or not guideline.strip() or len(guideline) > MAX_GUIDELINE:
        raise ratings.RatingError("guideline", f"expected the raters' instructions, 1 to {MAX_GUIDELINE} characters")
    items = list(ratings.targets(con, run_id)["example_id"])
    if sample is not None and not 1 <= sample <= len(items):
        raise ratings.RatingError("sample", f"{sample!r}; expected 1 to {len(items):,} (the run's outputs), or all")
    order = np.random.default_rng(seed).permutation(len(items))[: sample or len(items)]
    task_id = new_id()
    task = {"task_id": task_id, "run_id": run_id, "criteria": criteria, "overlap": overlap}
    store_tasks.create(con, task | {"guideline": guideline.strip(), "seed": seed}, [items[i] for i in order])
    return task_id


def new_id() -> str:
    """A new task's id: random, so that nothing about the run (its model, dataset, split) can be read from it."""
    return f"task-{secrets.token_hex(8)}"


def tasks(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return store_tasks.of_run(con, run_id)


EVERY_TASK = ("task_id", "run_id", "items", "complete", "overlapping", "overlap", "raters", "links", "guideline")


def every_task(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every rating task, whatever its run's source (a model, an import, a paper's run), newest first: its run,
    items, complete (k raters), with two or more raters, k, raters so far, live links, guideline, who made it
    and when."""
    found = store_tasks.listing(con)
    made = store_links.listing(con)
    alive = made["revoked_at"].isna() & (made["expires_at"] > store_links.now())
    live = made.loc[alive, "object"].value_counts()
    return found.assign(
        raters=[len(store_tasks.progress(con, t)) for t in found["task_id"]],
        links=[int(live.get(f"rating-task:{t}", 0)) for t in found["task_id"]],
    )[[*EVERY_TASK, "created_by", "created_at"]]


def next_item(con: duckdb.DuckDBPyConnection, task_id: str, rater_id: str) -> str | None:
    """The item to serve this rater now (claimed for them: a system write), or None when nothing is left for them.
    Who may be served as whom: `actions.ratings.next_item`."""
    rater = ratings.valid_rater(rater_id)
    if store_tasks.task(con, task_id) is None:
        raise ratings.RatingError("task", f"no rating task {task_id!r}; the Rate page lists every task")
    return store_tasks.claim(con, task_id, rater)


BLIND = ("example_id", "input", "context", "hypothesis", "output_text")  # what a rater is shown of an item


def blind_item(con: duckdb.DuckDBPyConnection, task_id: str, example_id: str) -> dict:
    """What a rater sees of an item: the input (context, hypothesis) and the output to rate — no gold, no label,
    no score or probability, no one else's rating."""
    task = store_tasks.task(con, task_id)
    if task is None or not store_tasks.has_item(con, task_id, example_id):
        raise ratings.RatingError("example_id", f"{example_id!r} is not an item of rating task {task_id!r}")
    items = ratings.targets(con, task["run_id"])
    row = items[items["example_id"] == example_id].iloc[0]
    return {key: (row[key] if isinstance(row[key], str) else None) for key in BLIND}


def done_by(con: duckdb.DuckDBPyConnection, task_id: str, rater_id: str) -> tuple[int, int]:
    """(items this rater has done, items in the task): a rater's own progress, nobody else's."""
    done = store_tasks.progress(con, task_id)
    mine = done.loc[done["rater_id"] == rater_id, "done"]
    return int(mine.sum()), len(store_tasks.rated_items(con, task_id))


def brief(con: duckdb.DuckDBPyConnection, task_id: str) -> dict:
    """What a rater is told of the task: its guideline, criteria and run (no progress of others, no agreement)."""
    task = store_tasks.task(con, task_id)
    if task is None:
        raise ratings.RatingError("task", f"no rating task {task_id!r}")
    return {key: task[key] for key in ("task_id", "run_id", "guideline")} | {"criteria": list(task["criteria"])}


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
    """`ratings.agreement` over the task's items (alpha counts the items with two or more raters)."""
    task = store_tasks.task(con, task_id)
    items = tuple(store_tasks.rated_items(con, task_id)["example_id"])
    return ratings.agreement(con, task["run_id"], items)
