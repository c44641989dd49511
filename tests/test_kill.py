"""`kill -9` in the middle of an ingest or a batch run leaves a store that opens, holds every dataset
whole or not at all, and lets the work resume (issue 12). Bounded: four kill points, one batch run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backend.store import queries
from backend.store.access import session

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ["falseqa", "nope"]
RUN = "falseqa/tiny-fp/detect/test"


def start(store: Path, *args: str, data: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PLAB_STORE_WAIT": "60", **({"PLAB_DATA_DIR": str(data)} if data else {})}
    return subprocess.Popen(
        [sys.executable, "-m", "backend", "--store", str(store), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def examples_per_dataset(store: Path) -> dict[str, int]:
    with session(store) as con:
        loaded = set(queries.loaded_datasets(con)["dataset_id"])
        counts = queries.split_label_counts(con).groupby("dataset_id")["n"].sum().to_dict()
    assert set(counts) <= loaded  # no examples without their dataset row
    return {d: int(counts.get(d, 0)) for d in loaded}


def test_an_ingest_killed_at_any_point_leaves_whole_datasets_and_can_run_again(real_store, tmp_path):
    whole = {d: n for d, n in examples_per_dataset(real_store).items() if d in DATASETS}
    store = tmp_path / "lab.duckdb"
    for delay in (0.5, 1.5, 3.0, 4.5):  # from loading the files to writing the second dataset (the whole: ~6 s)
        process = start(store, "ingest", "--only", *DATASETS)
        time.sleep(delay)
        kill(process)
        if store.exists():
            found = examples_per_dataset(store)  # opens: not damaged, not locked by the dead process
            assert all(found[d] == whole[d] for d in found), (delay, found, whole)  # whole or absent
    assert start(store, "ingest", "--only", *DATASETS).wait(timeout=300) == 0
    assert examples_per_dataset(store) == whole


@pytest.mark.slow
def test_a_batch_run_killed_mid_run_resumes_to_one_complete_run(lab, tmp_path):
    import shutil

    store = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], store)
    with session(store) as con:
        total = int(
            con.execute("SELECT count(*) FROM examples WHERE dataset_id = 'falseqa' AND split = 'test'").fetchone()[0]
        )
    process = start(store, "predict", "--model", "tiny-fp", "--dataset", "falseqa", "--split", "test", data=lab["data"])
    stored, deadline = 0, time.monotonic() + 240
    while stored == 0 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
        with session(store) as con:  # the run releases the store between chunks
            stored = con.execute("SELECT count(*) FROM predictions WHERE run_id = $r", {"r": RUN}).fetchone()[0]
    kill(process)
    with session(store) as con:
        status, partial = con.execute(
            "SELECT r.status, count(p.example_id) FROM runs r LEFT JOIN predictions p "
            "USING (run_id) WHERE r.run_id = $r GROUP BY r.status",
            {"r": RUN},
        ).fetchone()
    assert 0 < partial < total and status == "running"  # killed mid-run: chunks whole, the run not complete
    assert (
        start(store, "predict", "--model", "tiny-fp", "--dataset", "falseqa", "--split", "test", data=lab["data"]).wait(
            timeout=600
        )
        == 0
    )
    with session(store) as con:
        status, n, distinct = con.execute(
            """SELECT any_value(r.status), count(*), count(DISTINCT p.example_id)
            FROM runs r JOIN predictions p USING (run_id) WHERE r.run_id = $r""",
            {"r": RUN},
        ).fetchone()
    assert (status, n, distinct) == ("complete", total, total)
