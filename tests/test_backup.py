"""Backups hold every user row, restore puts them back, and an older store is upgraded in place (issue 12)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from backend.analysis import ratings as rate
from backend.api import Lab
from backend.cli.main import main
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.store import backup, migrations
from backend.store.access import session
from backend.store.connection import CRITERIA, connect
from backend.store.examples import Slice
from backend.views import explore

FIXTURES = Path(__file__).parent / "fixtures"
RUN = "falseqa/user/mine"
USER_ROWS = {table: f"SELECT * FROM ({select}) ORDER BY ALL" for table, select in backup.USER_ROWS.items()}


@pytest.fixture()
def store(real_store, tmp_path) -> Path:
    """A copy of the real store holding user rows: an imported run, a user dataset, ratings."""
    path = tmp_path / "lab.duckdb"
    shutil.copy(real_store, path)
    lab = Lab(path)
    assert lab.import_run(
        pd.DataFrame({"id": ["test-0", "test-1", "test-2"], "label": ["FP", "N", "FP"]}),
        dataset="falseqa",
        model="mine",
    ).ok
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "premise": ["Kim stopped.", "Kim didn't stop."],
            "hypothesis": ["Kim did.", "Kim did."],
            "label": ["entailment", "neutral"],
        }
    )
    bundle, _ = user_datasets.check(read(frame, name="mine.csv"), user_datasets.DatasetOptions(name="mine", task="nli"))
    with session(path) as con:
        user_datasets.save(con, bundle)
        rate.save(con, RUN, "test-0", "ann", {"acceptability": 1}, note='=HYPERLINK("x")')
        rate.save(con, RUN, "test-1", "bob", {"acceptability": 0})
    return path


def user_rows(path: Path) -> dict[str, list]:
    with session(path) as con:
        return {table: con.execute(select).fetchall() for table, select in USER_ROWS.items()}


def test_backup_then_restore_gives_back_every_user_row(store, tmp_path):
    before = user_rows(store)
    assert before["runs"] and before["predictions"] and before["ratings"] and before["examples"] and before["datasets"]
    assert main(["--store", str(store), "backup", "--to", str(tmp_path / "b")]) == 0
    assert backup.manifest(tmp_path / "b")["rows"]["ratings"] == 2
    with session(store) as con:  # lose everything the user had
        con.execute("DELETE FROM ratings WHERE source <> 'crowd'")
        for table in ("predictions", "runs"):
            con.execute(f"DELETE FROM {table} WHERE run_id = $r", {"r": RUN})
        for table in ("examples", "datasets"):
            con.execute(f"DELETE FROM {table} WHERE dataset_id = 'mine'")
    assert user_rows(store) != before
    assert main(["--store", str(store), "restore", str(tmp_path / "b")]) == 0
    after = user_rows(store)
    audited = after.pop("audit")  # append-only: it keeps the backup's and the restore's own rows, written since
    assert after == {table: rows for table, rows in before.items() if table != "audit"}
    assert set(before["audit"]) < set(audited)
    assert sorted(row[5:8] for row in set(audited) - set(before["audit"])) == [
        ("backup", str(tmp_path / "b"), "done"),
        ("restore", str(tmp_path / "b"), "done"),
    ]
    with session(store) as con:  # keys are given back too: Explore joins on them
        shown = explore.slice_frame(con, Slice("falseqa", run_a=RUN))
        assert shown["label_a"].notna().sum() == 3
        assert (
            con.execute("SELECT count(*) FROM runs WHERE dataset_id = 'mine' AND source = 'baseline'").fetchone()[0] > 0
        )


def test_restore_replaces_rows_with_the_same_keys_and_keeps_the_rest(store, tmp_path):
    with session(store) as con:
        backup.write(con, "test", target=tmp_path / "b")
        rate.save(con, RUN, "test-0", "ann", {"acceptability": 0})  # changed after the backup
        rate.save(con, RUN, "test-2", "cat", {"acceptability": 1})  # new after the backup
        backup.restore(con, tmp_path / "b")
        got = {
            (e, r): v
            for e, r, v in con.execute(
                "SELECT example_id, rater_id, value FROM ratings WHERE run_id = $r", {"r": RUN}
            ).fetchall()
        }
    assert got == {("test-0", "ann"): 1.0, ("test-1", "bob"): 0.0, ("test-2", "cat"): 1.0}


def test_destructive_actions_back_up_first(store):
    lab = Lab(store)
    frame = pd.DataFrame({"id": ["test-0", "test-1", "test-2"], "label": ["N", "N", "N"]})
    assert lab.import_run(frame, dataset="falseqa", model="mine", replace=True).ok
    lab.delete_run(RUN)
    from backend.imports.ingest import ingest

    assert ingest(["nope"], store=store)[0].status == "loaded"
    found = [meta["reason"] for _, meta in backup.listing(store)]
    assert found[:3] == ["re-ingest nope", f"delete run {RUN}", f"replace run {RUN}"]
    replaced = backup.listing(store)[2][0]  # taken before the replace: the original labels
    assert pd.read_parquet(replaced / "predictions.parquet").sort_values("example_id")["label"].tolist() == [
        "FP",
        "N",
        "FP",
    ]


def test_automatic_backups_are_pruned_but_manual_ones_kept(store, monkeypatch):
    monkeypatch.setenv("PLAB_BACKUPS_KEEP", "2")
    with session(store) as con:
        manual = backup.write(con, "manual")
        for i in range(4):
            backup.before(con, f"step {i}")
    reasons = [meta["reason"] for _, meta in backup.listing(store)]
    assert reasons == ["step 3", "step 2", "manual"] and manual.exists()


def test_a_damaged_backup_is_refused_with_the_file_and_nothing_changes(store, tmp_path):
    with session(store) as con:
        out = backup.write(con, "test", target=tmp_path / "b")
    (out / "ratings.parquet").write_bytes(b"not parquet")
    before = user_rows(store)
    with session(store) as con, pytest.raises(backup.BadBackup, match="ratings.parquet"):
        backup.restore(con, out)
    with pytest.raises(backup.BadBackup, match="not a backup folder"):
        backup.manifest(tmp_path)
    assert user_rows(store) == before
    assert main(["--store", str(store), "restore", str(tmp_path)]) == 1


def test_every_example_and_prediction_has_its_join_key(real_con):
    assert real_con.execute("SELECT count(*) FROM examples WHERE example_key IS NULL").fetchone()[0] == 0
    mismatched = real_con.execute("""
        SELECT count(*) FROM predictions p JOIN runs r USING (run_id)
        JOIN examples e ON e.dataset_id = r.dataset_id AND e.example_id = p.example_id
        WHERE p.example_key IS DISTINCT FROM e.example_key""").fetchone()[0]
    assert mismatched == 0


# --- upgrades ---


def _schema_3_store(path: Path) -> None:
    """A store as the previous release (schema 3) wrote it, holding user rows."""
    con = duckdb.connect(str(path))
    con.execute((FIXTURES / "schema_v3.sql").read_text())
    con.executemany("INSERT INTO criteria VALUES ($1, $2, $3, $4, $5, $6)", CRITERIA)
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    con.execute("""INSERT INTO datasets (dataset_id, title, source, sha256, loaded_at, description) VALUES
        ('mine', 'Mine', 'mine.csv', 'x', now(),
        '{"task": "detect", "labels": ["N", "FP"], "positive": "FP", "user": true}')""")
    con.execute(
        "INSERT INTO examples (dataset_id, example_id, split, input, gold_label) VALUES "
        "('mine', 'q1', 'test', 'Why is the sky green?', 'FP'), ('mine', 'q2', 'test', 'Why is the sky blue?', 'N')"
    )
    con.execute("""INSERT INTO runs (run_id, dataset_id, task, model_id, config, source, status, created_at) VALUES
        ('mine/user/m', 'mine', 'detect', 'm', '{"labels": ["N", "FP"]}', 'user', 'complete', now())""")
    con.execute(
        "INSERT INTO predictions (run_id, example_id, label, probs) VALUES "
        "('mine/user/m', 'q1', 'FP', [0.2, 0.8]), ('mine/user/m', 'q2', 'FP', [0.4, 0.6])"
    )
    con.execute(
        "INSERT INTO ratings (dataset_id, example_id, run_id, rater_id, source, criterion, value) VALUES "
        "('mine', 'q1', 'mine/user/m', 'ann', 'user', 'acceptability', 1)"
    )
    con.close()


def test_an_older_store_is_upgraded_in_place_keeping_user_rows_after_a_backup(tmp_path):
    path = tmp_path / "old.duckdb"
    _schema_3_store(path)
    before = user_rows_raw(path)
    con = connect(path)
    assert migrations.schema_version(con) == migrations.SCHEMA_VERSION
    frame = explore.slice_frame(con, Slice("mine", run_a="mine/user/m"))
    assert frame.set_index("example_id")["correct_a"].to_dict() == {"q1": True, "q2": False}
    con.close()
    after = user_rows_raw(path)
    assert {t: rows for t, rows in after.items() if t in before} == before
    assert all(not rows for t, rows in after.items() if t not in before)  # tables the upgrade added start empty
    [(folder, meta)] = backup.listing(path)
    assert meta["reason"] == "upgrade from schema 3" and meta["schema_version"] == "3"
    assert meta["rows"]["predictions"] == 2 and meta["rows"]["ratings"] == 1 and meta["rows"]["examples"] == 2


def user_rows_raw(path: Path) -> dict[str, list]:
    """The user rows without the columns and tables an upgrade adds."""
    con = duckdb.connect(str(path))
    tables = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    try:
        return {
            table: con.execute(
                f"SELECT * EXCLUDE ({', '.join(added)}) FROM ({select}) ORDER BY ALL" if added else select
            ).fetchall()
            for table, select in USER_ROWS.items()
            if table in tables
            for added in [_added(con, table)]
        }
    finally:
        con.close()


def _added(con, table: str) -> list[str]:
    """The columns of the table that upgrades added (schema 4's join key, schema 9's created_by)."""
    return [c[0] for c in con.execute(f"DESCRIBE {table}").fetchall() if c[0] in ("example_key", "created_by")]


def test_a_failed_upgrade_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "old.duckdb"
    _schema_3_store(path)
    monkeypatch.setitem(migrations.BACKFILL, migrations.SCHEMA_VERSION, ["SELECT no_such_column FROM examples"])
    with pytest.raises(duckdb.BinderException):
        connect(path)
    con = duckdb.connect(str(path))
    assert migrations.schema_version(con) == 3
    assert "example_key" not in _added(con, "examples")
    con.close()


def test_a_store_from_a_newer_release_is_refused_not_downgraded(tmp_path):
    path = tmp_path / "new.duckdb"
    connect(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(migrations.StoreTooNew, match="newer release"):
        connect(path)


def test_a_copy_of_the_store_file_alone_holds_every_write_while_the_store_is_still_open(store, tmp_path):
    from backend.store import writer

    live = {"run_id": "live/m/detect", "dataset_id": "live", "task": "detect", "model_id": "m", "source": "live"}
    with session(store):  # a dashboard keeps the store open: no close to checkpoint the WAL
        with session(store) as con:
            rate.save(con, RUN, "test-2", "cat", {"acceptability": 1})
            writer.store_live(con, live, [{"run_id": live["run_id"], "example_id": "q", "label": "FP"}])
        shutil.copy(store, tmp_path / "copy.duckdb")  # the .duckdb file only, not its .wal
    copy = duckdb.connect(str(tmp_path / "copy.duckdb"))
    assert copy.execute("SELECT value FROM ratings WHERE rater_id = 'cat'").fetchall() == [(1.0,)]
    assert copy.execute("SELECT label FROM predictions WHERE run_id = 'live/m/detect'").fetchall() == [("FP",)]
    copy.close()


def test_a_damaged_store_is_named_with_its_backups_and_the_note_goes_with_a_new_store(store, tmp_path):
    from backend.store.connection import StoreDamaged, damaged

    with session(store) as con:
        backup.write(con, "before the damage")
    data = bytearray(store.read_bytes())
    for at in range(len(data) // 4, len(data) - 4096, len(data) // 40):  # corrupted blocks
        data[at : at + 512] = bytes(512)
    store.write_bytes(bytes(data))
    # a query reads a broken block (pages and the CLI turn this into:)
    with pytest.raises(duckdb.Error) as failed, session(store) as con:
        for table in ("examples", "predictions", "ratings", "passages", "retrievals"):
            con.execute(f"SELECT * FROM {table}").fetchall()
    found = damaged(failed.value, store)
    assert isinstance(found, StoreDamaged)
    assert "1 backup(s)" in str(found) and "python -m backend restore" in str(found)
    with pytest.raises(StoreDamaged):  # remembered: a command that reads nothing broken says so too
        connect(store)
    store.rename(tmp_path / "broken.duckdb")
    connect(store).close()  # a new store in its place is not damaged
