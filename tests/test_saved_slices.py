"""Saved slices: saved from Explore, scored for every run on the Overview (the same accuracy Explore
shows), opened by name in a URL, refused with the field named when wrong, kept by backups."""

from __future__ import annotations

import pytest

from backend.analysis import saved_slices
from backend.store.access import session
from backend.store.examples import Slice
from backend.views import explore

ROBERTA = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
CLEFTS = (("trigger_type", ("clefts",)), ("adversarial", (False,)))


@pytest.fixture()
def store(store_copy):
    return store_copy


def test_the_matrix_scores_every_run_as_explore_does(store):
    with session(store) as con:
        saved_slices.save(con, "clefts, plain", Slice("nope", CLEFTS))
        matrix = saved_slices.matrix(con)
        summary = explore.slice_summary(con, Slice("nope", CLEFTS, ROBERTA))
        runs = explore.runs_for(con, "nope")
    row = matrix[(matrix["slice"] == "clefts, plain") & (matrix["run"] == ROBERTA)].iloc[0]
    assert row["n"] == summary.accuracy.n and row["accuracy"] == pytest.approx(summary.accuracy.value)
    assert row["low"] < row["accuracy"] < row["high"]
    classifiers = runs[runs["task"].isin(explore.CLASSIFICATION_TASKS)]
    assert set(matrix["run"]) == set(classifiers["run_id"])  # every classification run of the dataset


@pytest.mark.parametrize(
    "name, dataset, filters, field",
    [
        ("", "nope", CLEFTS, "name:"),
        ("a" * 81, "nope", CLEFTS, "name:"),
        ("ok", "nope", (("trigger_type", ("nonsense",)),), "filters: trigger_type has no value 'nonsense'"),
        ("ok", "nope", (("colour", ("red",)),), "filters: 'colour' is not a facet"),
        ("ok", "no-such-dataset", CLEFTS, "dataset:"),
    ],
)
def test_a_bad_slice_names_the_field_and_stores_nothing(store, name, dataset, filters, field):
    with session(store) as con:
        with pytest.raises(saved_slices.SliceError, match=field.replace("(", r"\(")):
            saved_slices.save(con, name, Slice(dataset, filters))
        assert saved_slices.listing(con).empty


def test_a_taken_name_is_refused_unless_replaced_and_backups_keep_slices(store):
    from backend.store import backup

    with session(store) as con:
        saved_slices.save(con, "mine", Slice("nope", CLEFTS))
        with pytest.raises(saved_slices.SliceError, match="saved already"):
            saved_slices.save(con, "mine", Slice("nope", (("trigger_type", ("re_verbs",)),)))
        assert saved_slices.get(con, "mine").filters == (("trigger_type", ("clefts",)), ("adversarial", ("false",)))
        saved_slices.save(con, "mine", Slice("nope", (("trigger_type", ("re_verbs",)),)), replace=True)
        folder = backup.write(con, "test")
        assert saved_slices.delete(con, "mine") and saved_slices.listing(con).empty
        backup.restore(con, folder)
        assert saved_slices.get(con, "mine").filters == (("trigger_type", ("re_verbs",)),)


def test_save_in_explore_see_on_the_overview_open_by_name(store, open_page):
    at = open_page(
        store, "pages/explore.py", {"dataset": "nope", "run_a": ROBERTA, "trigger_type": "clefts", "adversarial": "no"}
    )
    assert not at.exception
    n = at.metric[0].value
    at.text_input(key="slice_name").input("clefts, plain").run()
    at.button(key="slice_save").click().run()
    assert not at.exception and any("Saved clefts, plain" in s.value for s in at.success)
    at.button(key="slice_save").click().run()  # again: the name is taken
    assert any("saved already" in e.value for e in at.error)
    overview = open_page(store, "pages/overview.py")
    assert not overview.exception
    grid = next(d.value for d in overview.dataframe if "clefts, plain" in d.value.columns)
    cell = grid.set_index("run").loc[ROBERTA, "clefts, plain"]
    assert cell.endswith(f"n={n}")
    opened = open_page(store, "pages/explore.py", {"slice": "clefts, plain"})
    assert not opened.exception and opened.metric[0].value == n
    missing = open_page(store, "pages/explore.py", {"slice": "nobody saved this"})
    assert not missing.exception and any("no saved slice is called" in w.value for w in missing.warning)
