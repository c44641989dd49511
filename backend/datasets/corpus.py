"""The retrieval corpus: HippoRAG's Wikipedia paragraph pools plus IfQA's gold passages.

Passages are deduplicated by whitespace-normalised text; the id is a hash of that text
(`base.doc_id`), so it is stable across builds and the IfQA loader can write qrels without
knowing the corpus. IfQA passages have no title; a pool paragraph keeps its page title.
"""

from __future__ import annotations

from pathlib import Path

from backend.datasets import ifqa
from backend.datasets.base import DataError, Source, doc_id, need, normalise_space, read_json
from backend.store.bundle import Bundle

CORPUS_ID = ifqa.CORPUS_ID
POOLS = {
    "2wikimultihopqa": "hipporag_legacy_data/2wikimultihopqa_corpus.json",
    "musique": "hipporag_legacy_data/musique_train_corpus.json",
    "hotpotqa": "hipporag_legacy_data/hotpotqa_train_corpus.json",
}


def load(sources: dict[str, Source]) -> Bundle:
    bundle = Bundle(dataset={"dataset_id": "corpus"})
    passages: dict[str, dict] = {}
    root = sources["corpus"].path
    for origin, rel in POOLS.items():
        if (root / rel).is_file():
            for title, text in _pool(root / rel):
                _add(passages, origin, title, text)
        else:
            bundle.notes.append(f"{rel} not found: the {origin} pool is not in the corpus")
    if "ifqa" in sources:
        for text in ifqa.gold_passages(sources["ifqa"].path):
            _add(passages, "ifqa_gold", None, text)
    else:
        bundle.notes.append("IfQA not found: its gold passages are not in the corpus")
    bundle.passages = list(passages.values())
    return bundle


def _add(passages: dict[str, dict], origin: str, title: str | None, text: str) -> None:
    key = doc_id(text)
    if key in passages:
        if origin not in passages[key]["origins"]:
            passages[key]["origins"].append(origin)
        passages[key]["title"] = passages[key]["title"] or title
        return
    passages[key] = {
        "corpus_id": CORPUS_ID,
        "doc_id": key,
        "title": title,
        "text": normalise_space(text),
        "origins": [origin],
    }


def _pool(path: Path):
    """(title, text) pairs from a list of {title, text} or a {title: [sentence, ...]} object."""
    data = read_json(path)
    if isinstance(data, dict):
        for title, sentences in data.items():
            if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
                raise DataError(path, "expected a list of sentences", None, title)
            yield title, "".join(sentences)
    elif isinstance(data, list):
        for number, item in enumerate(data):
            if not isinstance(item, dict):
                raise DataError(path, "expected an object with title and text", None, f"[{number}]")
            yield (
                need(item, "title", str, path, None, f"[{number}]."),
                need(item, "text", str, path, None, f"[{number}]."),
            )
    else:
        raise DataError(path, f"expected a JSON array or object, got {type(data).__name__}")
