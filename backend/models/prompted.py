"""Every task by prompt, for any generator (a local model or an endpoint): render the template for each
item, complete, parse (`prompts.parsers`), and read label probabilities.

The label is what the response says, parsed; the probabilities are the first answer token's
verbaliser mass (answer-first templates) or, with `samples`, each label's share of N sampled
responses (self-consistency). A chain-of-thought response gives no first-token probabilities: its
probabilities are recorded as "none" unless it is sampled. Each prediction keeps the prompt sent, the
raw response, the parse status, the top log-probabilities and the mass left on other tokens.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from backend.models.output import Completion, Output
from backend.models.prompts import parsers
from backend.models.prompts.templates import Template

TOP_LOGPROBS = 10
MAX_TOKENS = {"nli": 8, "detect": 8, "qa": 32, "write": 160}
REASONING_TOKENS = 256
SAMPLE_TEMPERATURE = 0.7


@dataclass(frozen=True)
class Decoding:
    max_tokens: int | None = None  # default: by task (REASONING_TOKENS for chain of thought)
    temperature: float | None = None  # default: the model's (0 for endpoints); SAMPLE_TEMPERATURE with samples
    samples: int = 0  # > 0: label distribution over this many sampled responses
    seed: int = 0

    def tokens(self, template: Template) -> int:
        return self.max_tokens or (REASONING_TOKENS if template.reasons else MAX_TOKENS[template.task])


def demo_fields(template: Template, row: dict) -> dict:
    """A demonstration as the template sees it: the item's fields and its gold answer in the template's words."""
    answers = row.get("gold_answers")
    if template.verbalisers:
        answer = template.answer_word(row["gold_label"])
    else:
        answer = answers[0] if answers is not None and len(answers) else ""
    return {**item_fields(row), "answer": answer}


def item_fields(row: dict) -> dict:
    return {
        "premise": row.get("input") or "",
        "hypothesis": row.get("hypothesis") or "",
        "question": row.get("input") or "",
    }


def run(
    model,
    template: Template,
    labels: list[str],
    items: list[dict],
    demos: list[list[dict]] | None = None,
    contexts: list[list[str]] | None = None,
    hits=None,
    decoding: Decoding = Decoding(),
    budget=None,
    on_text=None,
) -> list[Output]:
    """One Output per item. `demos[i]` are item i's demonstration rows, `contexts[i]` its passages;
    `on_text(text so far)` streams a single item's response (not with samples)."""
    demos = demos or [[] for _ in items]
    prompts = [
        template.render(
            item_fields(item), [demo_fields(template, d) for d in demos[i]], contexts[i] if contexts else ()
        )
        for i, item in enumerate(items)
    ]
    classify = bool(template.verbalisers)
    if decoding.samples:
        temperature = SAMPLE_TEMPERATURE if decoding.temperature is None else decoding.temperature
        rounds = [
            model.complete(prompts, decoding.tokens(template), temperature, 0, decoding.seed + i, budget)
            for i in range(decoding.samples)
        ]
        responses = [[r[i] for r in rounds] for i in range(len(prompts))]
    else:
        top = TOP_LOGPROBS if classify and not template.reasons else 0
        responses = [
            [c]
            for c in model.complete(
                prompts, decoding.tokens(template), decoding.temperature, top, None, budget, on_text=on_text
            )
        ]
    return [
        _output(
            template,
            labels,
            prompts[i],
            responses[i],
            [d["example_id"] for d in demos[i]],
            tuple(hits[i]) if hits else (),
            decoding.samples,
        )
        for i in range(len(items))
    ]


def _output(
    template: Template,
    labels: list[str],
    prompt: str,
    responses: list[Completion],
    demo_ids: list,
    hits: tuple,
    samples: int,
) -> Output:
    first = responses[0]
    text = {
        "prompt": prompt,
        "template": template.ref,
        "demos": demo_ids,
        "generation": first.text,
        "tokens_in": sum(c.tokens_in for c in responses),
        "tokens_out": sum(c.tokens_out for c in responses),
        "cost": sum(c.cost for c in responses),
        "cached": all(c.cached for c in responses),
        "tokens_reported": all(c.usage_reported for c in responses),
    }
    if first.model:
        text["server_model"] = first.model  # what the server said answered: a swap of weights midway shows
    latency = sum(c.latency_ms for c in responses)
    if all(c.error for c in responses):
        return Output(text={**text, "parse": "error"}, passages=hits, latency_ms=latency, error=first.error)
    if samples:
        text["samples"] = [c.text for c in responses]
    if template.task in ("nli", "detect"):
        parsed = [parsers.label(c.text, template.verbalisers, template.reasons) for c in responses if not c.error]
        label, probs, status = _label(parsed, labels, samples)
        if samples:
            text["probabilities"] = "samples" if probs else "none: no sample parsed"
        elif first.top_logprobs and not parsers.usable_logprobs(first.top_logprobs):
            text |= {
                "top_logprobs": [[token, str(lp)] for token, lp in first.top_logprobs],  # NaN is not JSON
                "probabilities": "none: no usable log-probabilities (the server sent NaN or a value above 0)",
            }
        elif first.top_logprobs:
            probs, other = parsers.label_probabilities(list(first.top_logprobs), template.verbalisers, labels)
            text |= {
                "top_logprobs": [list(p) for p in first.top_logprobs],
                "other_mass": other,
                "probabilities": "logprobs" if probs else f"none: no verbaliser in the top {len(first.top_logprobs)}",
            }
        else:
            text["probabilities"] = (
                "none: chain of thought" if template.reasons else "none: the server gave no log-probabilities"
            )
        return Output(label=label, probs=probs, text={**text, "parse": status}, passages=hits, latency_ms=latency)
    if template.task == "qa":
        parsed = parsers.short_answer(first.text, template.reasons)
        return Output(answer=parsed.answer, text={**text, "parse": parsed.status}, passages=hits, latency_ms=latency)
    parsed = parsers.writing(first.text, crepe=template.strategy == "crepe")
    return Output(text={**text, **parsed.parts, "parse": parsed.status}, passages=hits, latency_ms=latency)


def _label(parsed: list[parsers.Parsed], labels: list[str], samples: int):
    """(label, sampled probabilities or None, status): the single response's parse, or the samples' majority."""
    if not samples:
        return parsed[0].label, None, parsed[0].status
    said = Counter(p.label for p in parsed if p.status == "ok")
    if not said:
        return None, None, parsed[0].status if parsed else "empty"
    best = max(labels, key=lambda name: (said[name], -labels.index(name)))
    return best, parsers.sampled_probabilities(parsed, labels), "ok"
