"""Training by epochs (issue 48, item 3): the recipe chooses its epochs, batch and precision by device, `--base`
fine-tunes any local encoder folder and registers it after its base, and a run stops at its epochs. The models are
tiny BERTs built in the test: they check the loop and the registration, not quality."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from backend.models import registry
from backend.training import recipes
from backend.training.finetune import GPU_EPOCHS, TrainConfig, nli_config, train
from tests.helpers import tiny_models

PAIRS = pd.DataFrame(
    {
        "premise": ["the cat sat on the mat", "a dog ran in the park", "he stopped smoking", "yes no maybe"] * 16,
        "hypothesis": ["the cat sat", "the park is green", "he used to smoke", "maybe"] * 16,
        "label": ["E", "N", "E", "C"] * 16,
    }
)


def test_a_run_stops_at_its_epochs_and_writes_its_card(tmp_path):
    base = tiny_models.classifier(tmp_path / "base", ["contradiction", "entailment", "neutral"])
    config = TrainConfig(labels=("E", "N", "C"), epochs=2, batch_size=16, max_minutes=5)
    card = train(PAIRS, tmp_path / "out", config, heldout=PAIRS.head(8), base=base)
    assert card["examples_seen"] == 2 * len(PAIRS)  # two whole passes, not the budget
    assert card["config"]["epochs"] == 2 and card["device"] == "cpu" and not card["config"]["bf16"]
    assert 0 <= card["heldout_accuracy"] <= 1 and card["heldout_examples"] == 8
    saved = json.loads((tmp_path / "out" / "model_card.json").read_text())
    assert saved["examples_seen"] == 128 and (tmp_path / "out" / "config.json").is_file()


def test_the_recipe_is_chosen_by_device():
    cpu = nli_config(torch.device("cpu"))
    assert (cpu.epochs, cpu.max_minutes, cpu.batch_size, cpu.max_length, cpu.bf16) == (1.0, 25, 32, 96, False)
    gpu = nli_config(torch.device("cuda"))  # the config alone: no GPU is touched
    assert (gpu.epochs, gpu.batch_size, gpu.max_length) == (GPU_EPOCHS, 64, 128)
    assert gpu.bf16 == torch.cuda.is_bf16_supported()  # False on a machine without CUDA
    assert nli_config(torch.device("cuda"), epochs=1, minutes=5).max_minutes == 5


def test_a_base_folder_is_fine_tuned_on_the_nli_sources_and_registered_after_its_name(tiny, tmp_path):
    base = tiny_models.classifier(tmp_path / "My Encoder.v2", ["contradiction", "entailment", "neutral"])
    card = recipes.train_nli(examples=32, epochs=1, base=base)
    name = recipes.nli_model(base=base)
    assert name == "my-encoder-v2-nli" and card["base"] == str(base) and card["examples_seen"] == 32
    model = registry.spec(name)
    assert model.load == "local" and model.labels == ("E", "N", "C")
    assert (registry.local_folder(model) / "config.json").is_file()
    assert "train nli --base" in model.train
    recipes.train_nli(examples=16, epochs=1, base=base)  # again: the same entry, the same folder
    assert list(registry.specs()).count(name) == 1
    with pytest.raises(ValueError, match="expected a transformers model folder"):
        recipes.train_nli(examples=16, base=tmp_path)
    assert np.isfinite(card["heldout_accuracy"]) and card["heldout_examples"] == recipes.HELDOUT_CAP
    assert "mnli_dev_matched" in card["trained_on"]  # the real sources, for the contamination flags
