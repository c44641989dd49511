"""Prompt templates, strict parsing, label probabilities and few-shot pools (pure: no model, no server)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from backend.models.endpoints.client import _first_answer_token
from backend.models.prompts import demos, parsers, templates

NLI = {"E": ("yes",), "N": ("maybe",), "C": ("no",)}


@pytest.mark.parametrize(
    "text, reasons, status, label",
    [
        ("Yes.", False, "ok", "E"),
        ("  no, because the premise says so", False, "ok", "C"),
        ("Answer: maybe", False, "ok", "N"),
        ("The answer is yes", False, "unparsed", None),  # never the nearest label word
        ("yes, no", False, "unparsed", None),  # two labels on the answer line: ambiguous
        ("No, no.", False, "ok", "C"),
        ("Entailment", False, "unparsed", None),  # not one of this template's verbalisers
        ("I'm sorry, I cannot answer that.", False, "refusal", None),
        ("   ", False, "empty", None),
        ("Stop presupposes it. Answer: no\nAnswer: yes", True, "ok", "E"),  # the last Answer: of a chain of thought
        ("Stop presupposes that she smoked.", True, "unparsed", None),  # reasoning that never answers
    ],
)
def test_a_label_is_read_only_where_the_template_says_it_is(text, reasons, status, label):
    parsed = parsers.label(text, NLI, reasons)
    assert (parsed.status, parsed.label) == (status, label)


def test_label_probabilities_merge_case_and_space_variants_and_keep_the_rest():
    top = [
        (" Yes", math.log(0.3)),
        ("yes", math.log(0.1)),
        ("No", math.log(0.2)),
        ("maybe", math.log(0.1)),
        ("I", math.log(0.2)),
    ]
    probs, other = parsers.label_probabilities(top, NLI, ["E", "N", "C"])
    assert probs == pytest.approx((0.4 / 0.7, 0.1 / 0.7, 0.2 / 0.7)) and other == pytest.approx(0.3)
    assert parsers.label_probabilities([("The", -0.1)], NLI, ["E", "N", "C"]) == (None, 1.0)


def test_both_logprob_shapes_servers_return_are_read():
    chat = {
        "content": [
            {"token": " ", "logprob": -0.1, "top_logprobs": []},
            {
                "token": "yes",
                "logprob": -0.5,
                "top_logprobs": [{"token": "yes", "logprob": -0.5}, {"token": "No", "logprob": -1.5}],
            },
        ]
    }
    legacy = {"tokens": ["\n", "yes"], "top_logprobs": [{"\n": -0.01}, {"yes": -0.5, "No": -1.5}]}
    assert _first_answer_token(chat) == _first_answer_token(legacy) == (("yes", -0.5), ("No", -1.5))
    assert _first_answer_token(None) is None


def test_a_users_template_replaces_a_built_in_one_and_bad_files_name_themselves(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAB_DATA_DIR", str(tmp_path))
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "mine.j2").write_text(
        "{#\nname: nli-zero-shot\nversion: 7\ntask: nli\nstrategy: zero-shot\n"
        'verbalisers: {E: ["true"], N: ["unknown"], C: ["false"]}\n#}\n'
        "P: {{ item.premise }}\nH: {{ item.hypothesis }}\nTrue, false or unknown?"
    )
    mine = templates.get("nli-zero-shot")
    assert mine.ref == "nli-zero-shot@7" and mine.render({"premise": "a", "hypothesis": "b"}).startswith("P: a\nH: b")
    with pytest.raises(templates.TemplateProblem, match="version 7, not 1"):
        templates.get("nli-zero-shot@1")
    (folder / "bad.j2").write_text(
        "{#\nname: x\nversion: 1\ntask: nli\nstrategy: zero-shot\nverbalisers: {E: [yes]}\n#}\nhi"
    )
    with pytest.raises(templates.TemplateProblem, match=r"bad\.j2: verbalisers must be quoted"):
        templates.all_templates()
    (folder / "bad.j2").write_text(
        "{#\nname: x\nversion: 1\ntask: qa\nstrategy: zero-shot\n#}\n{{ item.__class__.__mro__ }}"
    )
    with pytest.raises(templates.TemplateProblem, match=r"bad\.j2"):  # sandboxed: no reaching into Python
        templates.get("x").render({"question": "q"})
    (folder / "bad.j2").write_text("no header {{ item.question }}")
    with pytest.raises(templates.TemplateProblem, match=r"bad\.j2: expected a header first"):
        templates.all_templates()


def test_every_built_in_template_renders_and_names_its_task():
    item = {"premise": "P.", "hypothesis": "H.", "question": "Q?"}
    shown = {"premise": "dp", "hypothesis": "dh", "question": "dq", "answer": "yes"}
    for template in templates.all_templates().values():
        if template.task == "judge":  # a judge's rubric sees other variables: tests/test_judges.py renders those
            continue
        text = template.render(item, [shown, shown], ["passage one", "passage two"])
        assert ("P." in text and "H." in text) if template.task == "nli" else "Q?" in text, template.name
        assert ("dq" in text or "dp" in text) == (template.strategy == "few-shot"), template.name
        assert ("passage one" in text) == (template.strategy == "retrieve-then-read"), template.name


def test_demonstrations_never_include_the_item_and_cross_fold_keeps_to_other_folds():
    scored = pd.DataFrame({"example_id": [f"x{i}" for i in range(50)], "input": "q", "gold_label": "N"})
    train = pd.DataFrame({"example_id": [f"t{i}" for i in range(20)], "input": "q", "gold_label": "FP"})
    pool = demos.pool(train, "train", "test", scored)
    assert pool.kind == "split:train"
    drawn = pool.draw("x3", 4, seed=0)
    assert len(drawn) == 4 and set(drawn["example_id"]) <= set(train["example_id"])
    assert list(drawn["example_id"]) == list(pool.draw("x3", 4, seed=0)["example_id"])  # reproducible
    assert list(drawn["example_id"]) != list(pool.draw("x4", 4, seed=0)["example_id"])
    for whole in (None, "train"):  # scoring every split, or the training split itself: cross-fold
        assert demos.pool(train, "train", whole, scored).kind == "cross-fold"
    crossed = demos.pool(None, None, "test", scored)
    for item in scored["example_id"]:
        picked = crossed.draw(item, 5)
        assert item not in set(picked["example_id"])
        assert demos.fold(item) not in {demos.fold(e) for e in picked["example_id"]}
