"""The typed result of every task, one per input, as the runner stores it; and what a generator returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Output:
    label: str | None = None  # E/N/C, FP/N
    probs: tuple[float, ...] | None = None  # in the order of the task's labels
    answer: str | None = None  # QA
    text: dict = field(default_factory=dict)  # generated presupposition/correction, raw generations, evidence
    passages: tuple = ()  # retrieval Hits the model read, best first
    latency_ms: float | None = None  # this item's own time (endpoints); else the chunk's share
    error: str | None = None  # why this item has no answer (the run goes on)


@dataclass(frozen=True)
class Completion:
    """One generated response, from a local generator or an endpoint."""

    text: str
    top_logprobs: tuple[tuple[str, float], ...] | None = None  # the first answer token's top k, as sent
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    cost: float = 0.0  # USD, from the endpoint's prices (0 when cached or local)
    cached: bool = False
    error: str | None = None  # this request failed (e.g. the prompt is too long)
    usage_reported: bool = True  # False: the server gave no token counts (some do not when streaming)
    model: str | None = None  # the model the server named in this answer (an endpoint's; None for local models)


class RunStopped(RuntimeError):
    """A fault that stops a whole run rather than one item (a server down, a key refused, a budget
    reached): the run is left 'interrupted' and the same command resumes it."""


def readable(
    presupposition: str | None,
    correction: str | None,
    answer: str | None,
    label: str | None,
    generation: str | None = None,
    task: str = "write",
) -> str:
    """What a model wrote, readable (as people rate it and judges read it): its presupposition and
    correction, else its answer, else its label, else its raw generation, saying why it is raw: a writing
    model that ignored the two-line format, or another task's answer from which no label or answer was read."""
    parts = [
        f"{name}: {text.strip()}"
        for name, text in (("Presupposition", presupposition), ("Correction", correction))
        if isinstance(text, str) and text.strip()
    ]
    if not parts and not answer and not label and isinstance(generation, str) and generation.strip():
        why = "not in the Presupposition/Correction format" if task == "write" else f"no {task} answer could be read"
        return f"({why}) {generation.strip()}"
    return "\n".join(parts) or answer or label or ""
