"""Syn-(QA)²-style false-assumption question pairs from real facts (DOMAIN.md section 2).

Each pair is a question whose assumption holds (label N) and its minimal counterpart with one entity
swapped so that the assumption no longer holds (label FP), from:

- **multi-hop** — HotpotQA bridge questions (`hotpotqa_train.json`): a supporting document's title that
  occurs in the question is replaced by the most similar distractor title of the same question.
  Titles are matched loosely (case-insensitive, a trailing parenthetical such as " (film)" dropped;
  SOURCE.md: only about half of the bridge questions name a supporting title verbatim).
- **single-hop** — MuSiQue's single-hop sub-questions (`musique_train.json`) with their answers and
  supporting paragraphs: the supporting paragraph's title, where it occurs in the sub-question, is
  replaced by the most similar other paragraph title of the same question whose paragraph does not
  contain the answer (so the fact does not hold for it, as far as the text says).
- **triples** — your CSV of `subject, relation, object, template` (the template a wh-question with
  `{subject}`): the subject is replaced by the most similar subject that has the same relation to a
  different object and not this one.

Similarity: the paper counts shared Wikidata properties / Wikipedia categories, which are not
available offline. Here it is the cosine of the bundled MiniLM embeddings of each entity's paragraph
(for triples: of the subject's facts written out), kept when ≥ SIMILARITY. Every step reports how many
candidates it keeps (`Generated.steps`), and every question keeps the ids it came from (source
question, titles or triple, similarity).
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from backend.config import settings
from backend.datasets.base import DataError
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.store.bundle import Bundle

SIMILARITY = 0.3  # least cosine between the original and the replacement entity's text
STAGED = {"hotpotqa": "hotpotqa_train.json", "musique": "musique_train.json"}  # under corpus/hipporag_legacy_data


def staged(source: str) -> Path:
    """The staged HotpotQA or MuSiQue file beside the corpus (SOURCE.md there says where it comes from)."""
    return settings().shared_datasets / "corpus" / "hipporag_legacy_data" / STAGED[source]


@dataclass
class Generated:
    rows: list[dict] = field(default_factory=list)  # one per pair: question, counterpart, provenance
    steps: list[tuple[str, int]] = field(default_factory=list)  # (what was kept, how many)


def _loose(title: str) -> str:
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip()


def _find(title: str, question: str) -> tuple[int, int] | None:
    """Where `title` (or its loose form) occurs in the question, case-insensitively: (start, end) or None."""
    for form in dict.fromkeys((title, _loose(title))):
        found = re.search(r"(?<!\w)" + re.escape(form) + r"(?!\w)", question, flags=re.IGNORECASE)
        if found and len(form) >= 3:
            return found.span()
    return None


class _Vectors:
    """Embeddings of texts, each encoded once (one source's paragraphs recur across its questions)."""

    def __init__(self, embedder=None):
        if embedder is None:
            from backend.models.embed import Embedder  # lazy: start-up time (torch)

            embedder = Embedder()
        self.embedder, self.known = embedder, {}

    def prepare(self, texts) -> None:
        new = list(dict.fromkeys(t for t in texts if t not in self.known))
        if new:
            self.known.update(zip(new, self.embedder.encode(new)))

    def most_similar(self, anchor: str, candidates: dict[str, str]) -> tuple[str, float] | None:
        """The candidate (name → text) whose text is most similar to `anchor`, with its cosine."""
        if not candidates:
            return None
        self.prepare([anchor, *candidates.values()])
        names = list(candidates)
        scores = np.array([self.known[t] for t in candidates.values()]) @ self.known[anchor]
        best = int(np.argmax(scores))
        return names[best], float(scores[best])


def _swap(question: str, span: tuple[int, int], replacement: str) -> str | None:
    """The question with the entity at `span` replaced; None when that changes nothing."""
    swapped = question[: span[0]] + _loose(replacement) + question[span[1] :]
    return None if swapped.lower() == question.lower() else swapped


def _read_json(path: Path) -> list:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(path, f"could not read a JSON array: {exc}") from None


def hotpotqa(path: Path, embedder=None, threshold: float = SIMILARITY) -> Generated:
    out = Generated()
    records, vectors = _read_json(path), _Vectors(embedder)
    bridge = [r for r in records if r.get("type") == "bridge"]
    vectors.prepare(" ".join(sentences) for r in bridge for _, sentences in r["context"])
    out.steps.append(("HotpotQA bridge questions", len(bridge)))
    named, similar = 0, 0
    for record in bridge:
        context = {title: " ".join(sentences) for title, sentences in record["context"]}
        supporting = list(dict.fromkeys(title for title, _ in record["supporting_facts"]))
        for title in supporting:
            span = _find(title, record["question"])
            if span is None:
                continue
            named += 1
            distractors = {t: text for t, text in context.items() if t not in supporting}
            best = vectors.most_similar(context.get(title, title), distractors)
            swapped = _swap(record["question"], span, best[0]) if best else None
            if swapped is None or best[1] < threshold:
                continue
            similar += 1
            out.rows.append(
                {
                    "source_id": record["_id"],
                    "hop": "multi-hop",
                    "question": record["question"],
                    "counterpart": swapped,
                    "entity": title,
                    "replacement": best[0],
                    "similarity": round(best[1], 3),
                    "answer": record.get("answer"),
                    "passages": [title, best[0]],
                }
            )
            break  # one pair per question: the first supporting title it names
    out.steps += [
        ("… naming a supporting title (loosely)", named),
        (f"… with a distractor at similarity ≥ {threshold}", similar),
    ]
    return out


def musique(path: Path, embedder=None, threshold: float = SIMILARITY) -> Generated:
    out = Generated()
    records, vectors = _read_json(path), _Vectors(embedder)
    subs = [(r, s) for r in records for s in r.get("question_decomposition", []) if "#" not in s["question"]]
    out.steps.append(("MuSiQue single-hop sub-questions (no #k reference)", len(subs)))
    named, similar = 0, 0
    for record, sub in subs:
        paragraphs = {p["idx"]: p for p in record["paragraphs"]}
        gold = paragraphs.get(sub["paragraph_support_idx"])
        span = _find(gold["title"], sub["question"]) if gold else None
        if span is None:
            continue
        named += 1
        answer = str(sub["answer"]).lower()
        others = {
            p["title"]: p["paragraph_text"]
            for p in record["paragraphs"]
            if p["title"] != gold["title"] and answer not in p["paragraph_text"].lower()
        }
        best = vectors.most_similar(gold["paragraph_text"], others)
        swapped = _swap(sub["question"], span, best[0]) if best else None
        if swapped is None or best[1] < threshold:
            continue
        similar += 1
        out.rows.append(
            {
                "source_id": f"{record['id']}/{sub['id']}",
                "hop": "single-hop",
                "question": sub["question"],
                "counterpart": swapped,
                "entity": gold["title"],
                "replacement": best[0],
                "similarity": round(best[1], 3),
                "answer": sub["answer"],
                "passages": [gold["title"], best[0]],
            }
        )
    out.steps += [
        ("… naming their supporting paragraph's title", named),
        (f"… with another paragraph at similarity ≥ {threshold} that lacks the answer", similar),
    ]
    return out


def triples(
    source: Path | IO[bytes], embedder=None, threshold: float = SIMILARITY, name: str | None = None
) -> Generated:
    """Your CSV: subject, relation, object, template (a question with {subject} that assumes the fact).
    `source` may be an open file (an upload); `name` is then what errors call it."""
    path = Path(name) if name else Path(source)
    try:
        frame = pd.read_csv(source, dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(path, f"could not read the CSV: {exc}") from None
    missing = [c for c in ("subject", "relation", "object", "template") if c not in frame.columns]
    if missing:
        raise DataError(
            path,
            f"missing column {missing[0]!r}; a triples CSV has subject, relation, object, template",
            field=missing[0],
        )
    for i, template in enumerate(frame["template"]):
        if "{subject}" not in template:
            raise DataError(path, f"the template {template!r} has no {{subject}}", i + 2, "template")
    out, vectors = Generated(steps=[("triples", len(frame))]), _Vectors(embedder)
    facts: dict[str, str] = {}
    for row in frame.itertuples():  # each subject's facts written out: what its similarity is computed on
        facts[row.subject] = (facts.get(row.subject, "") + f"{row.subject} {row.relation} {row.object}. ").strip() + " "
    kept = 0
    for row in frame.itertuples():
        holds = set(frame.loc[(frame["relation"] == row.relation) & (frame["object"] == row.object), "subject"])
        others = frame[(frame["relation"] == row.relation) & ~frame["subject"].isin(holds)]["subject"].unique()
        best = vectors.most_similar(facts[row.subject], {s: facts[s] for s in others})
        if best is None or best[1] < threshold:
            continue
        kept += 1
        out.rows.append(
            {
                "source_id": f"{row.subject}|{row.relation}|{row.object}",
                "hop": "single-hop",
                "question": row.template.format(subject=row.subject),
                "counterpart": row.template.format(subject=best[0]),
                "entity": row.subject,
                "replacement": best[0],
                "similarity": round(best[1], 3),
                "answer": row.object,
                "passages": [],
            }
        )
    out.steps.append((f"… with a subject of the same relation, not this fact, at similarity ≥ {threshold}", kept))
    return out


def generate(
    source: str,
    threshold: float = SIMILARITY,
    upload: bytes | None = None,
    upload_name: str = "triples.csv",
    embedder=None,
) -> Generated:
    """One source's pairs: the staged HotpotQA or MuSiQue file, or your triples CSV given as bytes."""
    if source == "triples":
        if upload is None:
            raise ValueError("triples need your CSV (subject, relation, object, template)")
        return triples(io.BytesIO(upload), embedder, threshold, name=upload_name)
    return {"hotpotqa": hotpotqa, "musique": musique}[source](staged(source), embedder, threshold)


def bundle(generated: Generated, name: str, source: str) -> Bundle:
    """The pairs as a user detection dataset (N: the assumption holds; FP: it does not), one pair each."""

    if not generated.rows:
        raise ValueError("no pairs were generated: " + "; ".join(f"{what}: {n}" for what, n in generated.steps))
    rows = []
    for i, r in enumerate(generated.rows, start=1):
        keep = {
            "hop": r["hop"],
            "source_id": r["source_id"],
            "entity": r["entity"],
            "replacement": r["replacement"],
            "similarity": r["similarity"],
            "passages": json.dumps(r["passages"]),
            "gold_answer": r["answer"],
        }
        rows.append(
            {
                "example_id": f"p{i}-valid",
                "input": r["question"],
                "gold_label": "N",
                "pair_id": f"{name}/p{i}",
                "pair_role": "a valid",
                **keep,
            }
        )
        rows.append(
            {
                "example_id": f"p{i}-false",
                "input": r["counterpart"],
                "gold_label": "FP",
                "pair_id": f"{name}/p{i}",
                "pair_role": "b false_assumption",
                **keep,
            }
        )
    options = user_datasets.DatasetOptions(
        name=name,
        task="detect",
        title=f"{name} (Syn-(QA)²-style pairs from {source})",
        split="generated",
        columns={
            "example_id": "example_id",
            "input": "input",
            "gold_label": "gold_label",
            "pair_id": "pair_id",
            "pair_role": "pair_role",
        },
    )
    made, _ = user_datasets.check(read(pd.DataFrame(rows), name=source), options)
    made.notes = [f"generated from {source}: " + "; ".join(f"{what}: {n:,}" for what, n in generated.steps)]
    return made
