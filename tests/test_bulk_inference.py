"""The bulk inference paths a GPU uses (issue 48, item 1), run on the CPU: the real MiniLM embeds NOPE's premises
and hypotheses to the same vectors through the bulk path (chunked tokenising, token-budget batches, padding in
NumPy, pooling on the device) as through the batch path, and a classifier gives the same probabilities as one padded
batch of the tokenizer's own. They check batching, not quality."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from backend.models import embed
from backend.models.classifier import SequenceClassifier, gpu_tokens
from tests.helpers import tiny_models
from tests.helpers.data import shared


@pytest.fixture(scope="module")
def nope_pairs() -> list[tuple[str, str]]:
    lines = (shared("nope") / "annotated_corpus" / "nli_corpus.main.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines[:80]]
    return [(row["premise"], row["hypothesis"]) for row in rows]


def test_the_bulk_path_embeds_like_the_batch_path_with_the_real_minilm(nope_pairs, monkeypatch):
    texts = [p for p, _ in nope_pairs] + [h for _, h in nope_pairs] + ["word " * 400]  # one cut at 256 tokens
    monkeypatch.setattr(embed, "BULK_CHUNK", 40)  # several chunks: the next tokenised while one is embedded
    batch = embed.Embedder(device="cpu", bulk=False).encode(texts)
    bulk_model = embed.Embedder(device="cpu", bulk=True)
    assert bulk_model.max_tokens == embed.CPU_TOKENS
    bulk = bulk_model.encode(texts)
    cosine = (batch * bulk).sum(axis=1)
    assert bulk.shape == batch.shape and cosine.min() >= 0.9999, cosine.min()
    assert np.allclose(np.linalg.norm(bulk, axis=1), 1, atol=1e-5)
    assert bulk_model.encode([]).shape == (0, bulk_model.dimension)


def test_the_classifier_gives_the_probabilities_of_the_tokenizers_own_padding(nope_pairs, tmp_path):
    folder = tiny_models.classifier(tmp_path / "nli", ["contradiction", "entailment", "neutral"])
    model = SequenceClassifier(folder, device="cpu", batch_size=8)
    model.max_tokens = 300  # small batches of different shapes
    probs = model.predict(nope_pairs)
    reference = []
    with torch.inference_mode():
        for pair in nope_pairs:  # one at a time: no padding at all
            encoded = model.tokenizer(*pair, truncation=True, max_length=model.max_length, return_tensors="pt")
            reference.append(torch.softmax(model.model(**encoded).logits.float(), dim=-1)[0].numpy())
    assert np.allclose(probs, np.array(reference), atol=1e-5)
    assert (probs.argmax(axis=1) == np.array(reference).argmax(axis=1)).all()  # identical labels on NOPE


def test_a_gpu_budget_is_sized_by_the_cards_memory():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here: the budget is read from the card where one is lent")
    assert gpu_tokens(torch.device("cuda")) in (32_768, 131_072)
