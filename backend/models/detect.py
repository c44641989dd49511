"""False-premise detection: question → P(false premise), by one of three strategies.

- `classifier`: a question-only classifier (CREPE's question-only baseline), trained here;
- `generator`: ask the chat model "Does this question contain a false assumption?" and read
  P(yes) from the next-token logits (one forward pass, no sampling);
- `nli-retrieval`: retrieve passages and run NLI with each passage as premise and the question as
  hypothesis; P(FP) is the highest contradiction probability (evidence that contradicts the
  question's assumption), the passage that gave it is kept as evidence.
"""

from __future__ import annotations

import numpy as np

from backend.models import nli
from backend.models.output import Output

LABELS = ("N", "FP")
PROMPT = (
    "Does the following question contain a false assumption (something it takes for granted that is "
    "not true)? Answer yes or no.\nQuestion: {question}"
)


def _output(p_fp: float, threshold: float = 0.5, **extra) -> Output:
    return Output(label="FP" if p_fp >= threshold else "N", probs=(float(1 - p_fp), float(p_fp)), **extra)


def with_classifier(classifier, questions: list[str]) -> list[Output]:
    probs = classifier.predict(questions)
    return [_output(p) for p in probs[:, classifier.labels.index("FP")]]


def with_generator(generator, questions: list[str]) -> list[Output]:
    return [_output(p) for p in generator.yes_probability([PROMPT.format(question=q) for q in questions])]


def with_nli_retrieval(
    classifier, retriever, passages: dict[str, str], questions: list[str], k: int = 5
) -> list[Output]:
    hits = retriever.search_many(questions, k)
    pairs = [(passages[h.doc_id], q) for q, row in zip(questions, hits) for h in row]
    results = nli.run(classifier, pairs) if pairs else []
    outputs, at = [], 0
    for row in hits:
        contradiction = [r.probs[2] for r in results[at : at + len(row)]]
        at += len(row)
        if not contradiction:  # nothing retrieved: no evidence against the question
            outputs.append(_output(0.0, text={"evidence": None}))
            continue
        best = int(np.argmax(contradiction))
        outputs.append(_output(contradiction[best], text={"evidence": row[best].doc_id}, passages=tuple(row)))
    return outputs


STRATEGIES = ("classifier", "generator", "nli-retrieval")
