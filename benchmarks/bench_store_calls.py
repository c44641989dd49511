"""Count the store calls a page's cold render makes: calls from outside `backend/store/` into a function defined
there (each one opens a query on the store), through app.py as the server renders it, caches cleared first.

    .venv/bin/python -m benchmarks.bench_store_calls [--store PATH] [--page explore] [--param dataset=nope ...]

Prints the total, the calls per store function, the ratio against the target (issue 46: Explore's cold render
under 10 store calls), and the cold render's seconds measured again without the profiler.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections import Counter

import streamlit as st

from ui.apptest import render

TARGET = 10
SESSIONS = {"backend.store.access", "backend.store.connection", "backend.store.sessions"}  # holding the store open
# (and the dashboard's interface to it), not a query on it: the interface's calls into the store count as calls
NOT_QUERIES = {"writes"}  # writer.writes: this process's write counter, in memory


def counted(page: str, params: dict) -> tuple[Counter, float]:
    """({store function: calls made from outside the store}, the server's seconds on the rerun) while `page`
    renders once, cold (a function of backend.store's modules, not the sessions that hold the store open; the
    profiler slows the rerun, so its seconds are only compared with another counted rerun)."""
    st.cache_data.clear()
    st.cache_resource.clear()
    calls: Counter = Counter()

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        inside = caller.startswith("backend.store.") and caller != "backend.store.sessions"
        if not module.startswith("backend.store.") or inside or module in SESSIONS:
            return
        function = frame.f_globals.get(frame.f_code.co_name)
        module_level = getattr(function, "__code__", None) is frame.f_code  # not a lambda or a nested helper
        if module_level and frame.f_code.co_name not in NOT_QUERIES:
            calls[f"{module.removeprefix('backend.store.')}.{frame.f_code.co_name}"] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)  # AppTest runs the script in a thread of its own
    try:
        seconds, _ = render(f"pages/{page}.py", params)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return calls, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="the store to read (default: PLAB_STORE or the checkout's)")
    parser.add_argument("--page", default="explore")
    parser.add_argument("--param", action="append", default=[], help="a URL parameter, name=value")
    args = parser.parse_args()
    if args.store:
        os.environ["PLAB_STORE"] = args.store
    params = dict(p.split("=", 1) for p in args.param) or {"dataset": "nope"}
    render(f"pages/{args.page}.py", params)  # warm the imports and the store's own caches (run metrics)
    calls, _ = counted(args.page, params)
    st.cache_data.clear()
    st.cache_resource.clear()
    cold, _ = render(f"pages/{args.page}.py", params)  # again, unprofiled, for its time
    total = sum(calls.values())
    for name, n in calls.most_common():
        print(f"{n:4d}  {name}")
    print(f"{args.page} {params}: {total} store calls on a cold render; target < {TARGET}: ratio {total / TARGET:.2f}")
    print(f"{args.page}: cold render {cold:.3f} s (the server's script thread, caches cleared, no profiler)")


if __name__ == "__main__":
    main()
