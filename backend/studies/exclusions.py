"""The exclusion rules a design declared before data, applied in their order to the participants' responses:
which rule leaves out each participant (the first that does), and a log with, per rule, how many it names and how
many it newly leaves out. A participant who has not finished is left out of the analysis first (not a declared
rule: their answers are kept, and shown as "not finished").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.studies.design import Design

NOT_FINISHED = "not finished"
LOG = ["rule", "declared", "names", "newly_excluded", "remaining"]


def control_means(responses: pd.DataFrame) -> pd.Series:
    """participant → mean answer on the controls."""
    return responses[responses["kind"] == "control"].groupby("participant_id")["value"].mean()


def attention_failures(design: Design, responses: pd.DataFrame) -> pd.Series:
    """participant → attention checks answered outside their tolerance (a choice: another label)."""
    checks = responses[responses["kind"] == "attention"]
    failed = []
    for trial, value, label in zip(checks["trial"], checks["value"], checks["label"]):
        check = design.attention[int(trial.split(":")[1]) - 1]
        expected, _ = design.scale.value(check["expected"])
        if design.scale.kind == "choice":
            failed.append(label != str(check["expected"]))
        else:
            failed.append(abs(value - expected) > check["tolerance"] + 1e-9)
    return pd.Series(failed, index=checks["participant_id"], dtype=bool).groupby(level=0).sum()


def names(design: Design, rule: dict, participants: pd.DataFrame, responses: pd.DataFrame) -> set[str]:
    """The participants a rule names (among those who finished)."""
    finished = participants[participants["finished_at"].notna()]
    ids = set(finished["participant_id"])
    kind = rule["rule"]
    if kind == "controls_sd":
        means = control_means(responses[responses["participant_id"].isin(ids)])
        centre, spread = means.mean(), means.std(ddof=1)
        if len(means) < 2 or not spread > 0:
            return set()
        distance = (means - centre) / spread
        beyond = {"above": distance > rule["k"], "below": distance < -rule["k"], "either": distance.abs() > rule["k"]}
        return set(means[beyond[rule["direction"]]].index)
    if kind == "attention":
        failed = attention_failures(design, responses)
        return {p for p in ids if failed.get(p, 0) > rule["max_failed"]}
    if kind == "min_seconds":
        seconds = (finished["finished_at"] - finished["started_at"]).dt.total_seconds()
        return set(finished.loc[seconds < rule["seconds"], "participant_id"])
    native = responses[(responses["kind"] == "native") & (responses["label"] == "no")]
    return set(native["participant_id"]) & ids


def apply(design: Design, participants: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """Per participant: list, finished, seconds, controls' mean, attention failures, and `excluded_by` (the first
    rule that names them; "not finished"; '' when kept)."""
    return _applied(design, participants, responses)[0]


def kept(applied: pd.DataFrame) -> set[str]:
    """The participants `apply` leaves in the analysis."""
    return set(applied.loc[applied["excluded_by"] == "", "participant_id"])


def _applied(
    design: Design, participants: pd.DataFrame, responses: pd.DataFrame
) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    """`apply`'s frame, and per declared rule how many it names and how many it newly leaves out."""
    frame = participants.copy()
    frame["seconds"] = (frame["finished_at"] - frame["started_at"]).dt.total_seconds()
    frame["controls_mean"] = frame["participant_id"].map(control_means(responses))
    frame["attention_failed"] = frame["participant_id"].map(attention_failures(design, responses)).fillna(0)
    frame["excluded_by"] = np.where(frame["finished_at"].isna(), NOT_FINISHED, "")
    counts = []
    for rule in design.exclusions:
        named = names(design, rule, participants, responses)
        fresh = frame["participant_id"].isin(named) & (frame["excluded_by"] == "")
        frame.loc[fresh, "excluded_by"] = rule["rule"]
        counts.append((len(named), int(fresh.sum())))
    return frame, counts


def log(design: Design, participants: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """Rule by rule, in the declared order: the rule, in words, how many finished participants it names, how many it
    newly leaves out (not left out by an earlier rule), and how many remain after it."""
    applied, counts = _applied(design, participants, responses)
    remaining = int((applied["excluded_by"] != NOT_FINISHED).sum())
    unfinished = len(applied) - remaining
    rows = [
        {
            "rule": NOT_FINISHED,
            "declared": "started but has not finished (the study is open, or they left)",
            "names": unfinished,
            "newly_excluded": unfinished,
            "remaining": remaining,
        }
    ]
    for rule, (named, fresh) in zip(design.exclusions, counts):
        remaining -= fresh
        rows.append(
            {
                "rule": rule["rule"],
                "declared": design.rule_text(rule),
                "names": named,
                "newly_excluded": fresh,
                "remaining": remaining,
            }
        )
    return pd.DataFrame(rows, columns=LOG)
