"""Opening the store file. Code that may run beside other processes opens it through
`backend.store.access.session()`, which shares the file between them; `connect` is the raw open.

Inside a process, use one `cursor()` per thread (Streamlit sessions are threads).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import duckdb

from backend.config import settings
from backend.store import backup, migrations

CRITERIA = [
    # criterion, kind, min, max, labels, description
    (
        "nope_likelihood",
        "numeric",
        0,
        100,
        None,
        "NOPE crowd rating: how likely the hypothesis is true given the premise (0-100 slider)",
    ),
    (
        "nope_label",
        "label",
        None,
        None,
        ["E", "N", "C"],
        "NOPE crowd label: the rater's slider value mapped to E/N/C with rater-specific thresholds",
    ),
    (
        "nope_prior_likelihood",
        "numeric",
        0,
        100,
        None,
        "NOPE prior: how likely the hypothesis is true given the context alone, without the trigger sentence",
    ),
    ("fluency", "numeric", 0, 3, None, "CREPE writing: is the text fluent and grammatical? (0-3)"),
    (
        "presupposition",
        "numeric",
        0,
        3,
        None,
        "CREPE writing: is the presupposition correct and stated in the question? (0-3)",
    ),
    (
        "correction",
        "numeric",
        0,
        3,
        None,
        "CREPE writing: does the correction correct the presupposition with a true fact? (0-3)",
    ),
    (
        "consistency",
        "numeric",
        0,
        3,
        None,
        "CREPE writing: do presupposition and correction form a consistent pair? (0-3)",
    ),
    ("acceptability", "numeric", 0, 1, None, "QA: is the model's answer acceptable? (0 = no, 1 = yes)"),
    (
        "corrects_assumption",
        "numeric",
        0,
        1,
        None,
        "(QA)2: does the answer identify and correct the question's false assumption? (0 = no, 1 = yes)",
    ),
    (
        "equivalent",
        "numeric",
        0,
        1,
        None,
        "QA: does the answer mean the same as one of the gold answers? (0 = no, 1 = yes)",
    ),
    (
        "cb_commitment",
        "numeric",
        -3,
        3,
        None,
        "CommitmentBank crowd rating: how certain the speaker is that the complement is true (-3 certain it is false, "
        "0 not certain, +3 certain it is true)",
    ),
]


DAMAGE = (
    "not a valid DuckDB database file",
    "Could not read enough bytes",
    "Corrupt database file",
    "does not match stored checksum",
)  # what DuckDB says of an empty, truncated or corrupted file


class StoreDamaged(RuntimeError):
    """The store file is damaged: empty, truncated or corrupted. The message says how to recover."""


def damaged(exc: BaseException, path: Path | str | None = None) -> StoreDamaged | None:
    """A StoreDamaged saying what is wrong and what to do, if `exc` is DuckDB reporting a damaged file."""
    if not isinstance(exc, duckdb.Error) or not any(sign in str(exc) for sign in DAMAGE):
        return None
    problem = damage(str(exc).split("\n")[0][:200], path)
    _remember(store_path(path), problem)
    return problem


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".damaged")


def _remember(path: Path, problem: StoreDamaged) -> None:
    """Note the damage beside the file, so every page and command says so, not only those that read the
    broken blocks; the note holds for this file only (its inode): a rebuilt or restored store is new."""
    with contextlib.suppress(OSError):
        _marker(path).write_text(json.dumps({"inode": path.stat().st_ino, "problem": str(problem)}))


def known_damage(path: Path) -> StoreDamaged | None:
    """The damage found earlier in this very file, if any."""
    try:
        note = json.loads(_marker(path).read_text())
        if note["inode"] == path.stat().st_ino:
            return StoreDamaged(note["problem"])
        _marker(path).unlink()
    except (OSError, ValueError, KeyError):
        pass
    return None


def damage(detail: str, path: Path | str | None = None) -> StoreDamaged:
    """StoreDamaged naming what is wrong and, from the backups found, what to do."""
    target = store_path(path)
    found = backup.listing(target)
    where = (
        f"your own rows are in {len(found)} backup(s) in {backup.folder(target)} (newest {found[0][0].name}): "
        f"move {target.name} away, run `python -m backend ingest`, then `python -m backend restore`"
        if found
        else f"no backup of your own rows was found in {backup.folder(target)}: move {target.name} "
        "away and rebuild with `python -m backend ingest` (rows only you had cannot be recovered)"
    )
    return StoreDamaged(f"The store {target} is damaged ({detail}); {where}")


def store_path(path: Path | str | None = None) -> Path:
    return Path(path) if path is not None else settings().store_path


def existing_store(path: Path | str | None = None) -> Path:
    """The store file, or FileNotFoundError saying how to build it."""
    target = store_path(path)
    if not target.exists():
        raise FileNotFoundError(f"no store at {target}: build it with `python -m backend ingest`")
    return target


def connect(path: Path | str | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the store; a read-write open creates the file and the schema if needed."""
    target = store_path(path)
    if read_only:
        try:
            return duckdb.connect(str(existing_store(target)), read_only=True)
        except duckdb.ConnectionException:  # this process already has it open read-write: share that
            return duckdb.connect(str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        _marker(target).unlink(missing_ok=True)  # a new store, even on a reused inode, is not the damaged one
    elif (known := known_damage(target)) is not None:
        raise known
    try:
        con = duckdb.connect(str(target))
    except duckdb.Error as exc:
        _raise_if_damaged(exc, target)
        raise
    try:
        _check_length(con, target)
        migrations.bring_up_to_date(con, target, CRITERIA)  # bump migrations.SCHEMA_VERSION when CRITERIA change
    except BaseException as exc:
        con.close()
        _raise_if_damaged(exc, target)
        raise
    return con


def _check_length(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """A file shorter than the blocks it says are in use was cut off (a copy stopped midway, a full disk):
    say so at once rather than let whichever page first reads a missing block fail."""
    size, used = con.execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchall()[0]
    have = path.stat().st_size
    if have < used * size:
        problem = damage(f"the file is {have:,} bytes but holds {used} blocks of {size:,} bytes: it was cut off", path)
        _remember(path, problem)
        raise problem


def _raise_if_damaged(exc: BaseException, path: Path) -> None:
    problem = damaged(exc, path)
    if problem is not None:
        raise problem from None
