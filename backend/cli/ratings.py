"""The rating-task command of `python -m backend`: hand out a run's outputs to people with a target overlap
(each item rated by k people); they rate on the Rate page, each served items still short of k. The task's id is
random (`task-` and 16 hex digits) and printed: it names nothing of the run, model or data.

    python -m backend rating-task --run RUN --overlap 2 --sample 100 --guideline "Rate the correction first."
"""

from __future__ import annotations

import argparse
import sys

from backend.actions import ratings as rating_actions
from backend.analysis import rating_tasks, ratings
from backend.identity.actor import terminal
from backend.store.access import session


def add(sub) -> None:
    p = sub.add_parser("rating-task", help="hand out a run's outputs to raters, each item to k of them")
    p.add_argument("--run", required=True, help="the run whose outputs are rated")
    p.add_argument("--overlap", type=int, default=2, help="raters per item (k; 2 or more for agreement)")
    p.add_argument("--sample", type=int, help="a random sample of this many outputs (default: all)")
    p.add_argument("--seed", type=int, default=0, help="of the sample and the serving order")
    p.add_argument("--guideline", required=True, help="the instructions raters see above every item")
    p.set_defaults(func=cmd_rating_task)


def cmd_rating_task(args: argparse.Namespace) -> int:
    try:
        with session(args.store) as con:
            task_id = rating_actions.create_task(
                con, args.run, args.overlap, args.guideline, args.sample, args.seed, actor=terminal()
            )
            state = rating_tasks.progress(con, task_id)
    except ratings.RatingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(  # the id is random (task-…): it names nothing of the run, since it reaches raters in their links
        f"rating task {task_id}: {state['items']:,} items, each for {args.overlap} raters; the Rate page lists it "
        f"under Rating tasks (or open rate?run=…&task={task_id}); links for raters: "
        f"python -m backend links create --task {task_id} --person …"
    )
    return 0
