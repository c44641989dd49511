"""Judgement studies as the store keeps them (schema.sql: studies, study_participants, study_responses,
study_deletions, study_demographics).

A participant joins in one serialised transaction (`join`: the list with fewest participants so far), so two links
opened at once get balanced lists. An answer is written with its crowd rating (the study's dataset) in one
transaction, and only at the participant's next position (`answer`): a reload or a second tab cannot skip or
answer a trial twice.

Pilot participants (the researcher previewing the study) sit in the same tables with `pilot` set, so one code path
shows and stores their trials; every read here that counts, lists or analyses participants leaves them out (REAL),
and only `participant`, `answered` and `pilots` see them. Deleting a participant (`forget`) removes their responses,
their crowd ratings, their demographics and their row and logs the deletion, in the caller's transaction; `REAPPLY`
deletes again every participant the log names (a restore runs it after putting a backup's rows back).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import duckdb
import pandas as pd

PARTICIPANT = (
    "study_id",
    "participant_id",
    "list_no",
    "seed",
    "trials",
    "started_at",
    "finished_at",
    "completion_code",
    "pilot",
)
REAL = "pilot IS NOT TRUE"  # the participants and responses every count, list, analysis and export reads
HOLDING = "ended IS NULL"  # a participant who still holds a place: not timed out, not returned (issue 63, item 4)
ENDED = ("timed out", "returned", "screened out")


RESPONSE = (
    "study_id",
    "participant_id",
    "position",
    "kind",
    "trial",
    "value",
    "label",
    "answered_at",
    "moved",
    "rt_ms",
    "left_count",
    "left_ms",
    "pilot",
    "detail",
)


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def study(con: duckdb.DuckDBPyConnection, study_id: str) -> dict | None:
    cursor = con.execute("SELECT * FROM studies WHERE study_id = $s", {"s": study_id})
    rows = cursor.fetchall()
    if not rows:
        return None
    found = dict(zip([c[0] for c in cursor.description], rows[0]))
    return found | {"design": json.loads(found["design"])}


def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every study, newest first, with its participants (started, finished) and responses."""
    return con.execute(
        """SELECT s.study_id, s.dataset_id, s.version, s.status, s.created_by, s.created_at, s.frozen_at,
                  s.closed_at,
                  (SELECT count(*) FROM study_participants p WHERE p.study_id = s.study_id
                     AND p.pilot IS NOT TRUE) AS participants,
                  (SELECT count(*) FROM study_participants p WHERE p.study_id = s.study_id
                     AND p.finished_at IS NOT NULL AND p.pilot IS NOT TRUE) AS finished,
                  (SELECT count(*) FROM study_responses r WHERE r.study_id = s.study_id
                     AND r.pilot IS NOT TRUE) AS responses
           FROM studies s ORDER BY s.created_at DESC, s.study_id"""
    ).df()


def example_rows(con: duckdb.DuckDBPyConnection, dataset_id: str, ids: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every example of a dataset (or those of `ids`) with all its columns, `extra` as a dict (what a design draws
    its items from, and a trial's text)."""
    frame = con.execute(
        "SELECT * EXCLUDE (example_key) FROM examples WHERE dataset_id = $d "
        "AND ($ids IS NULL OR list_contains($ids, example_id)) ORDER BY example_id",
        {"d": dataset_id, "ids": None if ids is None else list(ids)},
    ).df()
    return frame.assign(extra=[json.loads(e) if isinstance(e, str) else (e or {}) for e in frame["extra"]])


def example_row(con: duckdb.DuckDBPyConnection, dataset_id: str, example_id: str) -> dict:
    """One example with all its columns, `extra` as a dict (a trial's text; `example_rows` for many)."""
    cursor = con.execute(
        "SELECT * EXCLUDE (example_key) FROM examples WHERE dataset_id = $d AND example_id = $e",
        {"d": dataset_id, "e": example_id},
    )
    row = dict(zip([c[0] for c in cursor.description], cursor.fetchone(), strict=True))
    extra = row.get("extra")
    return row | {"extra": json.loads(extra) if isinstance(extra, str) else (extra or {})}


STUDY = ("study_id", "dataset_id", "version", "design", "design_text", "status", "created_by", "created_at")


def insert(row: dict) -> tuple[str, dict]:
    """The statement that stores a new study (run in the transaction that writes the study's dataset)."""
    values = row | {"design": json.dumps(row["design"]), "created_at": now()}
    return f"INSERT INTO studies ({', '.join(STUDY)}) VALUES ({', '.join('$' + c for c in STUDY)})", values


def replacing(study_id: str, design: dict, text: str) -> list[tuple[str, dict]]:
    """The statements that make a new version of a design nobody has answered (run in the transaction that rewrites
    the study's dataset): participants who opened their link but gave no answer join the new version afresh, and
    pilot answers (the only answers an unfrozen study has) are deleted with their pilot participants."""
    return [
        ("DELETE FROM study_responses WHERE study_id = $s AND pilot", {"s": study_id}),
        ("DELETE FROM study_demographics WHERE study_id = $s", {"s": study_id}),  # only pilots finish unfrozen
        ("DELETE FROM study_participants WHERE study_id = $s", {"s": study_id}),
        (
            "UPDATE studies SET design = $d, design_text = $t, version = version + 1 "
            "WHERE study_id = $s AND frozen_at IS NULL",
            {"s": study_id, "d": json.dumps(design), "t": text},
        ),
    ]


def participant(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str) -> dict | None:
    rows = con.execute(
        f"SELECT {', '.join(PARTICIPANT)} FROM study_participants WHERE study_id = $s AND participant_id = $p",
        {"s": study_id, "p": participant_id},
    ).fetchall()
    if not rows:
        return None
    found = dict(zip(PARTICIPANT, rows[0]))
    return found | {"trials": json.loads(found["trials"]), "pilot": bool(found["pilot"])}


def list_counts(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[int, int]:
    """list number → participants given it who still hold their place (a timed-out or returned one does not)."""
    rows = con.execute(
        f"SELECT list_no, count(*) FROM study_participants WHERE study_id = $s AND {REAL} AND {HOLDING} "
        "GROUP BY list_no",
        {"s": study_id},
    ).fetchall()
    return dict(rows)


def add_participant(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    con.execute(
        f"INSERT INTO study_participants ({', '.join(PARTICIPANT)}) VALUES ({', '.join('$' + c for c in PARTICIPANT)})",
        row | {"trials": json.dumps(row["trials"])},
    )


def participant_count(con: duckdb.DuckDBPyConnection, study_id: str, pilot: bool = False) -> int:
    """How many real participants the study has (or, with `pilot`, pilot participants)."""
    return con.execute(
        "SELECT count(*) FROM study_participants WHERE study_id = $s AND coalesce(pilot, FALSE) = $pilot",
        {"s": study_id, "pilot": pilot},
    ).fetchall()[0][0]


def pilots(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[str, int]:
    """The study's pilot participants and their answers: {"participants", "answers"}."""
    found = con.execute(
        "SELECT (SELECT count(*) FROM study_participants WHERE study_id = $s AND pilot), "
        "(SELECT count(*) FROM study_responses WHERE study_id = $s AND pilot)",
        {"s": study_id},
    ).fetchall()[0]
    return {"participants": int(found[0]), "answers": int(found[1])}


def participant_responses(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str) -> pd.DataFrame:
    """One participant's responses (kind, trial, value, label), in the order given (inside the caller's transaction
    too: the answer just written is among them)."""
    return con.execute(
        "SELECT kind, trial, value, label FROM study_responses WHERE study_id = $s AND participant_id = $p "
        "ORDER BY position",
        {"s": study_id, "p": participant_id},
    ).df()


def answered(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str) -> int:
    """How many trials the participant has answered (their next position)."""
    return con.execute(
        "SELECT count(*) FROM study_responses WHERE study_id = $s AND participant_id = $p",
        {"s": study_id, "p": participant_id},
    ).fetchall()[0][0]


def add_response(con: duckdb.DuckDBPyConnection, response: dict, rating: dict | None, frozen: bool = False) -> None:
    """One answer (inside the caller's transaction): the response, the crowd rating it is, the study frozen unless
    the caller read it `frozen` already (a study is never unfrozen) (a pilot's answer: the response only, no rating,
    the design left free to change)."""
    con.execute(
        f"INSERT INTO study_responses ({', '.join(RESPONSE)}) VALUES ({', '.join('$' + c for c in RESPONSE)})",
        {c: response.get(c) for c in RESPONSE},
    )
    if rating is not None:
        con.execute(
            "INSERT INTO ratings (dataset_id, example_id, run_id, rater_id, source, criterion, value, label, rated_at) "
            "VALUES ($dataset_id, $example_id, '', $rater_id, 'crowd', $criterion, $value, $label, $rated_at)",
            rating,
        )
    if response.get("pilot") or frozen:
        return
    con.execute(
        "UPDATE studies SET frozen_at = $t WHERE study_id = $s AND frozen_at IS NULL",
        {"t": response["answered_at"], "s": response["study_id"]},
    )


def finish(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, code: str) -> None:
    con.execute(
        "UPDATE study_participants SET finished_at = $t, completion_code = $c "
        "WHERE study_id = $s AND participant_id = $p AND finished_at IS NULL",
        {"t": now(), "c": code, "s": study_id, "p": participant_id},
    )


def close(con: duckdb.DuckDBPyConnection, study_id: str) -> bool:
    """Close the study (once; inside the caller's transaction); whether it was open."""
    return bool(
        con.execute(
            "UPDATE studies SET status = 'closed', closed_at = $t WHERE study_id = $s AND status = 'open' "
            "RETURNING study_id",
            {"t": now(), "s": study_id},
        ).fetchall()
    )


def participants(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Every participant: list, seed, started, finished, completion code, trials, answers so far, and why they no
    longer hold a place (ended: timed out | returned; None while they do)."""
    return con.execute(
        """SELECT p.participant_id, p.list_no, p.seed, p.started_at, p.finished_at, p.completion_code,
                  json_array_length(p.trials) AS trials,
                  (SELECT count(*) FROM study_responses r WHERE r.study_id = p.study_id
                     AND r.participant_id = p.participant_id) AS answered, p.ended
           FROM study_participants p WHERE p.study_id = $s AND p.pilot IS NOT TRUE
           ORDER BY p.started_at, p.participant_id""",
        {"s": study_id},
    ).df()


def orders(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """participant_id, list_no, seed and the trials (JSON text) of every participant: the design's record."""
    return con.execute(
        f"SELECT participant_id, list_no, seed, trials FROM study_participants WHERE study_id = $s AND {REAL} "
        "ORDER BY participant_id",
        {"s": study_id},
    ).df()


def responses(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """Every response, long format, in the order given, with what the browser measured (moved, rt_ms, left_count,
    left_ms; NULL where it measured nothing)."""
    return con.execute(
        "SELECT participant_id, position, kind, trial, value, label, answered_at, moved, rt_ms, left_count, left_ms, "
        "detail FROM study_responses "
        f"WHERE study_id = $s AND {REAL} ORDER BY participant_id, position",
        {"s": study_id},
    ).df()


DELETION = ("study_id", "participant_id", "deleted_at", "deleted_by", "reason")
# Delete every participant the deletions log names (of study $s; NULL: of every study): their responses, their crowd
# ratings in the study's dataset, their demographics, their participant row. Run by `forget` and, after a restore, by
# backup.restore.
REAPPLY = [
    "DELETE FROM study_responses r USING study_deletions d WHERE r.study_id = d.study_id "
    "AND r.participant_id = d.participant_id AND ($s IS NULL OR d.study_id = $s)",
    "DELETE FROM study_demographics g USING study_deletions d WHERE g.study_id = d.study_id "
    "AND g.participant_id = d.participant_id AND ($s IS NULL OR d.study_id = $s)",
    "DELETE FROM ratings t USING study_deletions d WHERE t.dataset_id = d.study_id AND t.rater_id = d.participant_id "
    "AND t.source = 'crowd' AND t.run_id = '' AND ($s IS NULL OR d.study_id = $s)",
    "DELETE FROM study_participants p USING study_deletions d WHERE p.study_id = d.study_id "
    "AND p.participant_id = d.participant_id AND ($s IS NULL OR d.study_id = $s)",
]


def deletion(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str) -> dict | None:
    """The logged deletion of the participant's data (deleted_at, deleted_by, reason), or None."""
    cursor = con.execute(
        f"SELECT {', '.join(DELETION)} FROM study_deletions WHERE study_id = $s AND participant_id = $p",
        {"s": study_id, "p": participant_id},
    )
    rows = cursor.fetchall()
    return dict(zip(DELETION, rows[0])) if rows else None


def deletions(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """The study's deletions log: participant_id, deleted_at, deleted_by, reason (never an answer)."""
    return con.execute(
        "SELECT participant_id, deleted_at, deleted_by, reason FROM study_deletions WHERE study_id = $s "
        "ORDER BY deleted_at, participant_id",
        {"s": study_id},
    ).df()


def forget(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, by: str, reason: str) -> dict:
    """Log the deletion and delete the participant's responses, crowd ratings, demographics and row (inside the
    caller's transaction); what was deleted: {"responses", "ratings"}."""
    params = {"s": study_id, "p": participant_id}
    came = con.execute(
        "SELECT platform_id FROM study_participants WHERE study_id = $s AND participant_id = $p", params
    ).fetchall()
    key = platform_key(study_id, came[0][0]) if came and came[0][0] is not None else None
    counted = con.execute(
        "SELECT (SELECT count(*) FROM study_responses WHERE study_id = $s AND participant_id = $p), "
        "(SELECT count(*) FROM ratings WHERE dataset_id = $s AND rater_id = $p AND source = 'crowd' AND run_id = '')",
        params,
    ).fetchall()[0]
    con.execute(
        f"INSERT INTO study_deletions ({', '.join(DELETION)}, platform_key) VALUES ($s, $p, $t, $by, $why, $k)",
        params | {"t": now(), "by": by, "why": reason, "k": key},
    )
    for statement in REAPPLY:
        con.execute(statement, {"s": study_id})
    return {"responses": int(counted[0]), "ratings": int(counted[1])}


# Recruitment platforms (schema 14, issue 56 item 1): a participant a general link started carries the platform's id
# for them and the personal link their browser holds; the platform columns leave with the row (`forget`).
PLATFORM = ("participant_id", "platform", "platform_id", "platform_keep", "general_link", "browser_link", "finished_at")


def set_platform(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, row: dict) -> None:
    """Record (inside the caller's transaction) where a general link's participant came from: platform,
    platform_id, platform_keep (a dict), general_link and browser_link."""
    con.execute(
        "UPDATE study_participants SET platform = $platform, platform_id = $platform_id, "
        "platform_keep = $platform_keep, general_link = $general_link, browser_link = $browser_link "
        "WHERE study_id = $s AND participant_id = $p",
        row | {"platform_keep": json.dumps(row["platform_keep"]), "s": study_id, "p": participant_id},
    )


def _platform_row(cursor_rows: list) -> dict | None:
    if not cursor_rows:
        return None
    found = dict(zip(PLATFORM, cursor_rows[0]))
    return found | {"platform_keep": json.loads(found["platform_keep"] or "{}")}


def platform_key(study_id: str, platform_id: str) -> str:
    """The digest a deletion keeps of a platform id (the id itself leaves with the participant)."""
    return hashlib.sha256(f"{study_id}\x1f{platform_id}".encode()).hexdigest()


def withdrawn_platform(con: duckdb.DuckDBPyConnection, study_id: str, platform_id: str) -> str | None:
    """The participant id under which this platform id withdrew or was deleted and is still kept from starting
    again, or None."""
    rows = con.execute(
        "SELECT participant_id FROM study_deletions WHERE study_id = $s AND platform_key = $k",
        {"s": study_id, "k": platform_key(study_id, platform_id)},
    ).fetchall()
    return rows[0][0] if rows else None


def allow_platform(con: duckdb.DuckDBPyConnection, study_id: str, platform_id: str) -> None:
    """Let a withdrawn platform id start again (inside the caller's transaction)."""
    con.execute(
        "UPDATE study_deletions SET platform_key = NULL WHERE study_id = $s AND platform_key = $k",
        {"s": study_id, "k": platform_key(study_id, platform_id)},
    )


def by_platform(con: duckdb.DuckDBPyConnection, study_id: str, platform_id: str) -> dict | None:
    """The study's participant with this platform id (PLATFORM's fields), or None."""
    return _platform_row(
        con.execute(
            f"SELECT {', '.join(PLATFORM)} FROM study_participants WHERE study_id = $s AND platform_id = $i",
            {"s": study_id, "i": platform_id},
        ).fetchall()
    )


def platform_of(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str) -> dict | None:
    """Where the participant came from (PLATFORM's fields); None when they did not come through a general link."""
    return _platform_row(
        con.execute(
            f"SELECT {', '.join(PLATFORM)} FROM study_participants WHERE study_id = $s AND participant_id = $p "
            "AND platform_id IS NOT NULL",
            {"s": study_id, "p": participant_id},
        ).fetchall()
    )


def bind_browser(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, link_id: str | None) -> None:
    """The personal link that now acts as the participant (None: released, the next browser may take it over)."""
    con.execute(
        "UPDATE study_participants SET browser_link = $l WHERE study_id = $s AND participant_id = $p",
        {"l": link_id, "s": study_id, "p": participant_id},
    )


def general_count(con: duckdb.DuckDBPyConnection, link_id: str) -> int:
    """How many participants a general link has started who hold a place (in progress or finished; a withdrawn or
    deleted one's row is gone and frees the place, and so does one timed out or returned; pilots never come through
    one)."""
    return con.execute(
        f"SELECT count(*) FROM study_participants WHERE general_link = $l AND {REAL} AND {HOLDING}", {"l": link_id}
    ).fetchall()[0][0]


def time_out(con: duckdb.DuckDBPyConnection, study_id: str, cutoff: datetime) -> int:
    """Mark 'timed out' (inside the caller's transaction) every real participant who started before `cutoff` and
    has not finished nor ended; how many."""
    return con.execute(
        "UPDATE study_participants SET ended = 'timed out', ended_at = $t WHERE study_id = $s AND "
        f"{REAL} AND {HOLDING} AND finished_at IS NULL AND started_at < $c",
        {"s": study_id, "c": cutoff, "t": now()},
    ).fetchall()[0][0]


def end(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, why: str, code: str | None = None) -> None:
    """Mark the participant ended (`why`: one of ENDED; `code`: the completion code of that path, if any), inside the
    caller's transaction."""
    con.execute(
        "UPDATE study_participants SET ended = $w, ended_at = $t, completion_code = coalesce($c, completion_code) "
        "WHERE study_id = $s AND participant_id = $p",
        {"s": study_id, "p": participant_id, "w": why, "t": now(), "c": code},
    )


def ended(con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str) -> str | None:
    """Why the participant no longer holds a place ('timed out', 'returned'), or None."""
    rows = con.execute(
        "SELECT ended FROM study_participants WHERE study_id = $s AND participant_id = $p",
        {"s": study_id, "p": participant_id},
    ).fetchall()
    return rows[0][0] if rows else None


def platform_ids(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """participant_id, platform, platform_id and the kept parameters (JSON text) of every real participant a general
    link started: personal data, read only by `manage platform ids` (the study's maker or an owner)."""
    return con.execute(
        "SELECT participant_id, platform, platform_id, platform_keep AS kept, started_at, finished_at "
        f"FROM study_participants WHERE study_id = $s AND platform_id IS NOT NULL AND {REAL} "
        "ORDER BY started_at, participant_id",
        {"s": study_id},
    ).df()


# Demographics (schema 15, issue 56 item 5): personal data, read only through `manage platform ids` (the study's maker
# or an owner); they leave with the participant (REAPPLY).
DEMOGRAPHIC = ("study_id", "participant_id", "name", "value", "answered_at", "pilot")


def add_demographics(
    con: duckdb.DuckDBPyConnection, study_id: str, participant_id: str, answers: dict, pilot: bool
) -> None:
    """A participant's demographic answers (question name → text, None when left blank), one row each, inside the
    caller's transaction."""
    at = now()
    con.executemany(
        f"INSERT INTO study_demographics ({', '.join(DEMOGRAPHIC)}) VALUES (?, ?, ?, ?, ?, ?)",
        [(study_id, participant_id, name, value, at, pilot) for name, value in answers.items()],
    )


def demographics(con: duckdb.DuckDBPyConnection, study_id: str) -> pd.DataFrame:
    """participant_id, name, value (text; None: left blank), answered_at of every real participant's demographic
    answers (pilots' left out)."""
    return con.execute(
        f"SELECT participant_id, name, value, answered_at FROM study_demographics WHERE study_id = $s AND {REAL} "
        "ORDER BY answered_at, participant_id, name",
        {"s": study_id},
    ).df()
