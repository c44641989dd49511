"""Model loading and tasks through the production code path, on tiny random models built here."""

from __future__ import annotations

import time

import numpy as np
import pytest

from backend.models import availability, detect, loading, nli, prompted, registry
from backend.models.prompts import parsers, templates
from tests.helpers import tiny_models


def test_user_registry_extends_the_built_in_one(tiny):
    names = set(registry.specs())
    assert {"tiny-nli", "minilm-embedder", "smollm2-135m"} <= names


def test_a_changed_registry_entry_loads_the_model_it_now_names(tiny, tmp_path):
    """A model is kept with the entry it was loaded from: point the name at other weights (a user editing
    registry.local.toml, or another data folder) and the next call loads those, not the first ones."""
    first = loading.get("tiny-nli")
    assert loading.get("tiny-nli") is first  # unchanged entry: the same loaded model
    other = dict(tiny["tiny-nli"], path=str(tiny_models.classifier(tmp_path / "other", ["entailment", "neutral"])))
    tiny_models.register(tmp_path / "data", {**tiny, "tiny-nli": other})
    second = loading.get("tiny-nli")
    assert second is not first and len(second.labels) == 2


def test_nli_probabilities_come_back_in_e_n_c_order(tiny):
    model = loading.get("tiny-nli")
    assert model.labels == ["C", "E", "N"]
    outputs = nli.run(model, [("the cat sat on the mat", "a cat sat"), ("he stopped smoking", "he smoked")] * 3)
    assert len(outputs) == 6 and all(abs(sum(o.probs) - 1) < 1e-6 for o in outputs)
    raw = model.predict([("the cat sat on the mat", "a cat sat")])[0]
    assert outputs[0].probs == pytest.approx((raw[1], raw[2], raw[0]))  # reordered, not relabelled
    assert outputs[0].label == "ENC"[int(np.argmax(outputs[0].probs))]


def test_batched_predictions_equal_one_at_a_time(tiny):
    model = loading.get("tiny-nli")
    pairs = [("the cat sat", "a dog ran in the park today"), ("why", "sky"), ("paris is the capital of france", "no")]
    together = model.predict(pairs)
    alone = np.vstack([model.predict([p]) for p in pairs])
    assert np.allclose(together, alone, atol=1e-5)


def test_detector_and_generator_strategies(tiny):
    """The question-only classifier and a generator prompted with the built-in template both give a
    distribution over N/FP; the generator's comes from its first answer token (or none, if no label
    word is in its top k: a random tiny model may put none there, and then says so)."""
    questions = [
        {"example_id": "a", "input": "why is the sky green"},
        {"example_id": "b", "input": "why is the sky blue"},
    ]
    for o in detect.with_classifier(loading.get("tiny-fp"), [q["input"] for q in questions]):
        assert o.label in ("FP", "N") and abs(sum(o.probs) - 1) < 1e-9
    outputs = prompted.run(loading.get("tiny-gen"), templates.get("detect-zero-shot"), ["N", "FP"], questions)
    for o in outputs:
        assert o.text["parse"] in parsers.STATUSES and o.text["prompt"].endswith("Answer:")
        assert (o.label is None) == (o.text["parse"] != "ok")  # never a label from an unparsed response
        assert len(o.text["top_logprobs"]) == prompted.TOP_LOGPROBS
        if o.probs is not None:
            assert abs(sum(o.probs) - 1) < 1e-9 and o.text["probabilities"] == "logprobs"
        else:
            assert o.text["probabilities"].startswith("none: no verbaliser")


def test_generation_tasks_return_text(tiny):
    generator = loading.get("tiny-gen")
    item = [{"example_id": "a", "input": "why is the sky green"}]
    answers = prompted.run(generator, templates.get("qa-zero-shot"), [], item)
    assert "generation" in answers[0].text and answers[0].text["parse"] in parsers.STATUSES
    written = prompted.run(generator, templates.get("write-two-lines"), [], item)
    assert {"presupposition", "correction", "generation", "prompt"} <= set(written[0].text)


def test_models_are_loaded_once_and_shared(tiny):
    assert loading.get("tiny-fp") is loading.get("tiny-fp")


def test_missing_local_model_says_how_to_make_it(tmp_path):
    model = registry.ModelSpec(
        name="minilm-nli",
        task="nli",
        load="local",
        quality="",
        path=str(tmp_path / "absent"),
        train="python -m backend train nli",
        train_minutes=25,
    )
    assert availability.status(model)[0] is False
    with pytest.raises(registry.ModelUnavailable, match=r"make it with `python -m backend train nli` \(about 25 min"):
        registry.weights_path(model)


def test_hub_id_offline_fails_fast_with_a_remedy(tiny, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    with pytest.raises(registry.ModelUnavailable, match=r"offline.*huggingface-cli download someone/some-nli-model"):
        loading.get("offline-hub")
    assert time.monotonic() - started < 2


def test_unknown_model_lists_the_registered_ones(tiny):
    with pytest.raises(ValueError, match=r"registered: \[.*'tiny-nli'"):
        registry.spec("nope-model")


@pytest.mark.slow
def test_real_bundled_embedder_and_generator_load_offline():
    """Integration: the packaged MiniLM and the GGUF SmolLM2 load from site-packages with no network."""
    embedder = loading.get("minilm-embedder")
    vectors = embedder.encode(
        ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."]
    )
    similarity = vectors @ vectors.T
    assert (
        similarity[0, 1] == pytest.approx(0.755, abs=0.01) and similarity[0, 2] < 0.1
    )  # sentence-transformers' example
    generator = loading.get("smollm2-135m")
    assert "paris" in generator.generate(["What is the capital of France? Answer in a few words."], 12)[0].lower()
    [done] = generator.complete(
        ["Is the question 'When did Zuckerberg found Google?' based on a false assumption? Answer yes or no."],
        max_tokens=4,
        top_logprobs=10,
    )
    probs, other = parsers.label_probabilities(list(done.top_logprobs), {"FP": ("yes",), "N": ("no",)}, ["N", "FP"])
    assert probs is not None and 0 < probs[1] < 1 and 0 <= other < 1


class FixedRetriever:
    """Returns the same two passages for every question (stands in for BM25/FAISS)."""

    def search_many(self, questions, k):
        from backend.retrieval.base import Hit

        return [[Hit("d1", 2.0, 1), Hit("d2", 1.0, 2)][:k] for _ in questions]


def test_detection_by_nli_over_retrieved_passages_keeps_its_evidence(tiny):
    passages = {"d1": "the sky is blue", "d2": "grass is green"}
    outputs = detect.with_nli_retrieval(
        loading.get("tiny-nli"), FixedRetriever(), passages, ["why is the sky green", "why is grass green"], k=2
    )
    model = loading.get("tiny-nli")
    for question, out in zip(["why is the sky green", "why is grass green"], outputs):
        contradiction = [nli.run(model, [(passages[d], question)])[0].probs[2] for d in ("d1", "d2")]
        assert out.probs[1] == pytest.approx(max(contradiction))  # P(FP) = strongest contradiction
        assert out.text["evidence"] == ("d1", "d2")[int(np.argmax(contradiction))]
        assert [h.doc_id for h in out.passages] == ["d1", "d2"]
