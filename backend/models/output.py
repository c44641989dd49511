"""The typed result of every task, one per input, as the runner stores it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Output:
    label: str | None = None                 # E/N/C, FP/N
    probs: tuple[float, ...] | None = None   # in the order of the task's labels
    answer: str | None = None                # QA
    text: dict = field(default_factory=dict) # generated presupposition/correction, raw generations, evidence
    passages: tuple = ()                     # retrieval Hits the model read, best first
