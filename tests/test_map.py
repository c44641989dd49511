"""The embedding map: UMAP separates what differs, maps are cached per dataset version, points carry
a run's correctness as Explore counts it, Explore's filters highlight the same items, a region lists
its items, and the page computes a missing map in a process of its own (the real embedder)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from backend.imports import datasets as user_datasets
from backend.store.access import session
from backend.store.examples import Slice
from backend.views import explore
from backend.views import map as embedding_map
from tests.helpers.studio import TEMPLATE, WordsEmbedder

ROBERTA = "nope/RoBERTa-large/mnli-snli-anli-fever/1"


@pytest.fixture()
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("PLAB_DATA_DIR", str(folder))
    return folder


def test_umap_keeps_two_clusters_apart():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, (100, 32)) + 6, rng.normal(0, 1, (100, 32)) - 6
    xy = embedding_map.reduce(np.vstack([a, b]), "umap")
    centre_a, centre_b = xy[:100].mean(axis=0), xy[100:].mean(axis=0)
    spread = max(np.linalg.norm(xy[:100] - centre_a, axis=1).mean(), np.linalg.norm(xy[100:] - centre_b, axis=1).mean())
    assert xy.shape == (200, 2) and np.linalg.norm(centre_a - centre_b) > 3 * spread


def test_a_map_is_cached_per_dataset_version_and_points_carry_correctness(store_copy, data_dir):
    with session(store_copy) as con:
        target, timing = embedding_map.compute(con, "nope", "pca", WordsEmbedder())
        assert target.is_file() and target.parent == data_dir / "indexes" / "maps" and timing["items"] == 2732
        assert not embedding_map.path(con, "nope", "umap").is_file()  # each method is its own map
        sha = con.execute("SELECT sha256 FROM datasets WHERE dataset_id = 'nope'").fetchone()[0]
        assert sha[:12] in target.name  # a changed dataset has another sha256, so another map
        frame = embedding_map.points(con, "nope", "pca", ROBERTA)
        summary = explore.slice_summary(con, Slice("nope", (), ROBERTA))
        clefts = explore.slice_count(con, Slice("nope", (("trigger_type", ("clefts",)), ("adversarial", (False,)))))
    assert len(frame) == 2732 and frame[["x", "y"]].notna().all().all()
    right = (frame["correct"] == "right").sum()
    assert right == round(summary.accuracy.value * summary.accuracy.n)
    assert embedding_map.matches(frame, (("trigger_type", ("clefts",)), ("adversarial", (False,)))).sum() == clefts
    box = {"x": [frame["x"].quantile(0.25), frame["x"].quantile(0.75)], "y": [frame["y"].min(), frame["y"].max()]}
    region = embedding_map.inside(frame, box)
    assert 0 < len(region) < len(frame) and region["x"].between(*box["x"]).all()


def test_the_page_computes_a_missing_map_in_the_background_then_shows_it(store_copy, data_dir, open_page):
    from backend.execution import jobs
    from backend.studio import templates

    # PCA: the job, its progress line and the page's pick-up are what is tested; UMAP in a fresh process would
    # add ~20 s of numba compiling (test_umap_keeps_two_clusters_apart covers UMAP itself)

    with session(store_copy) as con:
        # 18 sentences: the real embedder maps them in seconds
        user_datasets.save(con, templates.bundle(templates.expand(TEMPLATE), "t.yaml"))
    at = open_page(store_copy, "pages/map.py", {"dataset": "stop-under-operators", "method": "pca"})
    assert not at.exception and any("No PCA map" in i.value for i in at.info)
    at.button(key="map_compute").click().run()
    assert not at.exception
    deadline = time.monotonic() + 240
    while jobs.alive("map-stop-under-operators-pca") and time.monotonic() < deadline:
        time.sleep(1)
    log = jobs.last_line("map-stop-under-operators-pca")
    assert "18 items mapped by pca" in log and "/" not in log, log  # issue 54, item 10: no server path shown
    whole = Path(jobs.read("map-stop-under-operators-pca")["log"]).read_text()
    assert "reducing 18 vectors to 2-D by PCA" in whole  # the step after the embedding's bar says what runs
    shown = open_page(
        store_copy, "pages/map.py", {"dataset": "stop-under-operators", "method": "pca", "extra.operator": "negation"}
    )
    assert not shown.exception and not shown.error
    assert any("6 of 18 points match" in c.value for c in shown.caption), [c.value for c in shown.caption]


def test_the_item_embeddings_are_kept_so_the_next_method_does_not_embed_again(store_copy, data_dir):
    """Embedding is the slow part of a map: the second method reuses the kept vectors (the embedder is not
    called), and a changed text is embedded afresh."""

    class Counting(WordsEmbedder):
        calls = 0

        def encode(self, texts, progress=None):
            Counting.calls += 1
            return super().encode(texts)

    with session(store_copy) as con:
        items = embedding_map.texts(con, "nope")
        first, _ = embedding_map.build(embedding_map.path(con, "nope", "pca"), items, "pca", Counting())
        second, timing = embedding_map.build(embedding_map.path(con, "nope", "umap"), items, "umap", Counting())
    assert Counting.calls == 1 and embedding_map.vectors_path(first) == embedding_map.vectors_path(second)
    assert timing["items"] == 2732
    changed = items.assign(text=items["text"].where(items.index > 0, "another text"))
    embedding_map.build(first, changed, "pca", Counting())
    assert Counting.calls == 2  # the kept vectors were of other texts


def test_the_map_command_shows_embedding_progress_with_the_time_left(store_copy, data_dir):
    """What the Map page shows while it computes: the command's progress line (count, rate, time left)."""
    from backend.studio import templates

    with session(store_copy) as con:
        user_datasets.save(con, templates.bundle(templates.expand(TEMPLATE), "t.yaml"))
    done = subprocess.run(
        [sys.executable, "-m", "backend", "--store", str(store_copy), "map", "stop-under-operators", "--method", "pca"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PLAB_DATA_DIR": str(data_dir)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "embedding 18 items (the slow part" in done.stderr and "18/18" in done.stderr and "<00:00" in done.stderr
