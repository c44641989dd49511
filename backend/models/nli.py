"""NLI: (premise, hypothesis) → E/N/C with probabilities, from any registered NLI classifier."""

from __future__ import annotations

from backend.models.output import Output

LABELS = ("E", "N", "C")


def run(classifier, pairs: list[tuple[str, str]]) -> list[Output]:
    """Probabilities reordered to E, N, C whatever the model's own label order."""
    probs = classifier.predict(pairs)
    order = [classifier.labels.index(label) for label in LABELS]
    return [Output(label=LABELS[int(p[order].argmax())], probs=tuple(float(x) for x in p[order])) for p in probs]
