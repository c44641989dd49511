"""Counterfactual QA: a short answer, closed-book (question only) or open-book (question + passages)."""
from __future__ import annotations

from backend.models.output import Output

CLOSED = "Answer the question with a short phrase (a few words), no explanation.\nQuestion: {question}\nAnswer:"
OPEN = ("Use the passages to answer the question with a short phrase (a few words), no explanation. "
        "The question may describe a hypothetical situation.\n{context}\nQuestion: {question}\nAnswer:")
MAX_NEW_TOKENS = 24


def first_line(text: str) -> str:
    """The answer part of a generation: its first line, without a leading 'Answer:'.

    >>> first_line("Answer: 4 hours\\nBecause ...")
    '4 hours'
    """
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.removeprefix("Answer:").strip().rstrip(".")


def prompts(questions: list[str], contexts: list[list[str]] | None = None) -> list[str]:
    """Closed-book prompts, or open-book ones that number each question's passages."""
    if contexts is None:
        return [CLOSED.format(question=q) for q in questions]
    return [OPEN.format(question=q, context="\n".join(f"Passage {i + 1}: {p}" for i, p in enumerate(c)))
            for q, c in zip(questions, contexts)]


def run(generator, questions: list[str], contexts: list[list[str]] | None = None, hits=None) -> list[Output]:
    raw = generator.generate(prompts(questions, contexts), max_new_tokens=MAX_NEW_TOKENS)
    return [Output(answer=first_line(r), text={"generation": r}, passages=tuple(hits[i]) if hits else ())
            for i, r in enumerate(raw)]
