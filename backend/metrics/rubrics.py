"""The rating scales people and judges score outputs on: each criterion's levels and what each level means.

CREPE's four writing criteria (Yu et al. 2023, "CREPE: Open-Domain Question Answering with False
Presuppositions", human evaluation on 0-3), binary acceptability for every other task, and two binary
criteria that judges score and people can rate beside them. The same texts are shown beside the Rate
page's form and rendered into the judges' rubric prompts, so a person and a judge read one rubric.
The store's `criteria` table (backend/store/connection.py) holds each criterion's bounds.
"""

from __future__ import annotations

# CREPE's human evaluation of writing (Yu et al. 2023): 0 = not at all … 3 = fully
RUBRIC: dict[str, dict[int, str]] = {
    "fluency": {
        0: "Not fluent: the text is ungrammatical or hard to read",
        1: "Barely fluent: many grammatical errors or awkward phrasing",
        2: "Mostly fluent: minor errors that do not hinder reading",
        3: "Fully fluent: grammatical and natural",
    },
    "presupposition": {
        0: "Not at all: the written presupposition is not the false assumption the question makes",
        1: "Barely: it touches the question's false assumption but misstates it",
        2: "Mostly: it states the false assumption with minor inaccuracies or extra content",
        3: "Fully: it states exactly the false assumption the question makes",
    },
    "correction": {
        0: "Not at all: the correction does not correct the presupposition, or is itself false",
        1: "Barely: it disputes the presupposition without a (true) supporting fact",
        2: "Mostly: it corrects the presupposition with a mostly true fact",
        3: "Fully: it corrects the presupposition with a true fact",
    },
    "consistency": {
        0: "Not at all: presupposition and correction are unrelated",
        1: "Barely: they are related but the correction does not negate the presupposition",
        2: "Mostly: the correction largely negates the presupposition",
        3: "Fully: the correction negates the presupposition; they form a consistent pair",
    },
    "acceptability": {
        0: "Not acceptable: the answer is wrong or does not respond to the input",
        1: "Acceptable: the answer is correct and responds to the input",
    },
    # (QA)2 (Kim et al. 2023) rates whether an answer to a question with a questionable assumption says so
    "corrects_assumption": {
        0: "No: the answer goes along with the question's false assumption, or ignores it",
        1: "Yes: the answer identifies the question's false assumption and corrects it",
    },
    # open-domain QA where exact match fails (e.g. IfQA's counterfactual answers)
    "equivalent": {
        0: "Not equivalent: the answer means something other than every gold answer",
        1: "Equivalent: the answer means the same as one of the gold answers, whatever its wording",
    },
}
WRITING_CRITERIA = ("fluency", "presupposition", "correction", "consistency")
# what a person reads above a criterion's choices, where its stored name is not plain words (else it, capitalised)
TITLES: dict[str, str] = {
    "corrects_assumption": "Corrects the false assumption",
    "equivalent": "Equivalent to a gold answer",
}


def title(criterion: str) -> str:
    """The criterion in plain words, e.g. 'Corrects the false assumption' for corrects_assumption."""
    return TITLES.get(criterion) or criterion.replace("_", " ").capitalize()


def criteria_for(task: str) -> list[str]:
    """The criteria people rate a run of `task` on by default: CREPE's four for writing, acceptability otherwise."""
    return list(WRITING_CRITERIA) if task == "write" else ["acceptability"]


def levels(criterion: str) -> dict[int, str]:
    """score → what it means; a ValueError names the known criteria."""
    if criterion not in RUBRIC:
        raise ValueError(f"no rubric for criterion {criterion!r}; known: {', '.join(RUBRIC)}")
    return RUBRIC[criterion]
