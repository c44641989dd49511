"""IfQA (Yu et al., EMNLP 2023): open-domain QA under counterfactual presuppositions.

Both official partitions of the same 3,800 questions are loaded: IfQA-S (splits `S-train`,
`S-dev`, `S-test`) and IfQA-F few-shot (`F-train`, `F-dev`, `F-test`). `idx` restarts in every
file, so the global id is `<S|F>-<split>-<idx>`; `extra.qid` (hash of the question text) links
the same question across partitions. Gold passages go to the corpus (see corpus.py) and to
`qrels`, keyed by the content hash `doc_id`.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from backend.datasets.base import DataError, Source, doc_id, need, need_str_list, read_json
from backend.store.bundle import Bundle

FILES = {
    f"{part}-{split}": f"dataset/{folder}/{split}.json"
    for part, folder in (("S", "full_split"), ("F", "few_split"))
    for split in ("train", "dev", "test")
}
CORPUS_ID = "wiki"

MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
DATE = re.compile(
    rf"^(?:(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?(?:{MONTHS})\b.*|\d{{1,2}}(?:st|nd|rd|th)?\s+century.*"
    rf"|(?:in\s+|the\s+)?\d{{4}}s?(?:\s*(?:ad|bc|bce|ce))?|\d{{1,4}}\s*(?:bc|bce|ad|ce)"
    rf"|\d{{1,2}}[/-]\d{{1,2}}[/-]\d{{2,4}}|(?:early|mid|late)[\s-]+\d{{3,4}}s?)$",
    re.IGNORECASE,
)
NUMBER_WORDS = (
    "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
    "hundred|thousand|million|billion|trillion|half|dozen|a dozen|a hundred|a thousand|a million"
)
NUMBER = re.compile(
    rf"^(?:about\s+|approximately\s+|around\s+|over\s+|under\s+|nearly\s+|more than\s+|less than\s+)?"
    rf"(?:[$£€¥]\s*)?(?:[-+]?\d[\d,]*(?:\.\d+)?|{NUMBER_WORDS})\b",
    re.IGNORECASE,
)
SMALL_WORDS = {
    "of",
    "the",
    "and",
    "a",
    "an",
    "in",
    "on",
    "for",
    "to",
    "de",
    "la",
    "le",
    "von",
    "van",
    "der",
    "du",
    "at",
    "&",
}
WH = (
    "how many",
    "how much",
    "how long",
    "how old",
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "where",
    "why",
    "how",
)


def answer_type(answers: list[str]) -> str:
    """entity | number | date | other, from the first acceptable answer.

    Rule (the release has no type field): *date* if the answer is a date or a year/decade/century
    expression; else *number* if it starts with a numeral or number word (quantities with units
    included, e.g. "4 hours"); else *entity* if every content word is capitalised (a proper name,
    e.g. "Barack Obama", "United Kingdom"); else *other*.

    >>> [answer_type([a]) for a in ["1990", "4 hours", "Barack Obama", "red", "2018 FIFA World Cup"]]
    ['date', 'number', 'entity', 'other', 'entity']
    """
    text = answers[0].strip().strip(".") if answers else ""
    if not text:
        return "other"
    if DATE.match(text):
        return "date"
    number = NUMBER.match(text)
    if number and not re.search(r"\b[A-Z]", text[number.end() :]):
        return "number"
    words = [w for w in re.split(r"[\s\-]+", text) if w and w.lower() not in SMALL_WORDS]
    if words and all(w[0].isupper() or w[0].isdigit() or not w[0].isalpha() for w in words):
        return "entity"
    return "other"


def question_type(question: str) -> str:
    """The wh-phrase of the main clause: first one after the "If …," clause, else anywhere, else 'other'.

    >>> question_type("If the sun were cold, how many planets would exist?")
    'how many'
    """
    lowered = question.lower()
    main = lowered.split(",", 1)[1] if lowered.startswith("if ") and "," in lowered else lowered
    for text in (main, lowered):
        hits = [(m.start(), wh) for wh in WH for m in re.finditer(rf"\b{wh}\b", text)]
        if hits:
            return min(hits, key=lambda h: (h[0], -len(h[1])))[1]
    return "other"


def load(sources: dict[str, Source]) -> Bundle:
    root = sources["ifqa"].path
    bundle = Bundle(dataset={"dataset_id": "ifqa"})
    for split, rel in FILES.items():
        if not (root / rel).is_file():
            bundle.notes.append(f"{rel} not found: split {split} is not loaded")
            continue
        for example, passages in _read(root / rel, split):
            bundle.examples.append(example)
            bundle.qrels += [
                {"dataset_id": "ifqa", "example_id": example["example_id"], "corpus_id": CORPUS_ID, "doc_id": doc_id(p)}
                for p in dict.fromkeys(passages)
            ]
    return bundle


def gold_passages(root: Path) -> list[str]:
    """Every gold passage text in the release, in file order (for the corpus)."""
    return [
        p for rel in FILES.values() if (root / rel).is_file() for _, passages in _read(root / rel, "") for p in passages
    ]


def _read(path: Path, split: str):
    items = read_json(path)
    if not isinstance(items, list):
        raise DataError(path, f"expected a JSON array of questions, got {type(items).__name__}")
    for number, item in enumerate(items):
        where = f"item {number}"
        if not isinstance(item, dict):
            raise DataError(path, f"{where}: expected an object", None)
        idx = need(item, "idx", int, path, None, f"[{number}].")
        question = need(item, "question", str, path, None, f"[{number}].")
        answers = need_str_list(item, "answers", path, None, f"[{number}].")
        passages = need_str_list(item, "context", path, None, f"[{number}].")
        yield (
            {
                "example_id": f"{split}-{idx}",
                "split": split,
                "input": question,
                "gold_answers": answers,
                "answer_type": answer_type(answers),
                "question_type": question_type(question),
                "extra": {
                    "idx": idx,
                    "qid": hashlib.sha1(question.encode()).hexdigest()[:12],
                    "n_gold_passages": len(passages),
                },
            },
            passages,
        )
