"""Writing for false-premise questions: state the false presupposition and correct it (CREPE's task)."""
from __future__ import annotations

import re

from backend.models.output import Output

PROMPT = ("The question below takes something for granted that is false.\nQuestion: {question}\n"
          "Reply in exactly two lines:\nPresupposition: <what the question assumes>\nCorrection: <why that is false>")


def parse(text: str) -> dict[str, str]:
    """Split a generation into presupposition and correction (empty when a part is missing).

    >>> parse("Presupposition: the moon is cheese\\nCorrection: it is rock")
    {'presupposition': 'the moon is cheese', 'correction': 'it is rock'}
    """
    parts = {}
    for key in ("presupposition", "correction"):
        match = re.search(rf"{key}\s*:\s*(.+)", text, re.IGNORECASE)
        parts[key] = match.group(1).strip() if match else ""
    return parts


def run(generator, questions: list[str]) -> list[Output]:
    raw = generator.generate([PROMPT.format(question=q) for q in questions], max_new_tokens=80)
    return [Output(text={**parse(r), "generation": r}) for r in raw]
