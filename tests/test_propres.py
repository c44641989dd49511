"""PROPRES (issue 30): the real files' counts and checksums as in ../shared/datasets/propres/SOURCE.md, the crowd
judgements as ratings, broken rows named by file, line and field, and a Projection cell recomputed person by
person from the CSV with pandas."""

from __future__ import annotations

import shutil
from collections import Counter

import pandas as pd
import pytest

from backend.analysis import projection
from backend.datasets import propres
from backend.datasets.base import DataError, Source
from tests.helpers.data import checked_sums, manifest_sums, shared


def load(root):
    return propres.load({"propres": Source("propres", root, "shared")})


@pytest.fixture(scope="module")
def bundle():
    return load(shared("propres"))


def test_the_files_have_the_checksums_of_source_md_and_the_download_manifest():
    listed = checked_sums("propres")
    assert len(listed) == 37 and manifest_sums("propres") == listed


def test_the_real_files_load_with_the_documented_counts(bundle):
    templated = [e for e in bundle.examples if e["split"] != "human"]
    human = [e for e in bundle.examples if e["split"] == "human"]
    assert len(templated) == 28 * 200 + 4 * 1_200 and len(human) == 619 and not bundle.notes
    per_file = Counter(e["extra"]["file"] for e in templated)
    assert all(n == (1_200 if name.endswith("_control.tsv") else 200) for name, n in per_file.items())
    assert len(per_file) == 32 and not any(name.endswith("_all.tsv") for name in per_file)
    assert len({e["example_id"] for e in bundle.examples}) == len(bundle.examples)
    assert len(bundle.ratings) == 24_631 and sum(e["extra"]["judgements"] for e in human) == 24_631
    operators = Counter()
    for e in human:
        operators[e["extra"]["operator"]] += e["extra"]["judgements"]
    assert operators == {
        "unembedded": 5_827,
        "negation": 5_810,
        "question": 5_938,
        "conditional": 5_834,
        "modal": 1_222,
    }
    assert {e["trigger_type"] for e in human} == {
        "again",
        "comparative",
        "change_of_state",
        "factive",
        "manner",
        "temporal",
    }
    assert sum(e["ambiguous"] for e in human) == 133
    assert not any("%2C" in e["input"] for e in bundle.examples)  # decoded
    per_item = Counter(r["example_id"] for r in bundle.ratings)
    assert min(per_item.values()) == 3 and max(per_item.values()) == 129


def test_template_and_people_agree_as_source_md_counts(bundle):
    """Template label → person's label over the 24,631 judgements: E→E 10,405, C→C 9,595, C→E 1,561, …"""
    by_id = {e["example_id"]: e for e in bundle.examples}
    raw = pd.read_csv(shared("propres") / propres.HUMAN)
    pairs = Counter(zip(raw["predifined_label"].map(propres.LABELS), raw["human_selection"].map(propres.LABELS)))
    assert pairs[("E", "E")] == 10_405 and pairs[("C", "E")] == 1_561 and pairs[("N", "N")] == 0
    unambiguous = Counter(
        (by_id[r["example_id"]]["gold_label"], r["label"])
        for r in bundle.ratings
        if not by_id[r["example_id"]]["ambiguous"]
    )
    assert all(n <= pairs[key] for key, n in unambiguous.items())  # the loader's gold is the file's template label


def test_a_projection_cell_is_the_people_s_share_recomputed_from_the_csv(real_con):
    raw = pd.read_csv(shared("propres") / propres.HUMAN)
    raw[["premise", "hypothesis"]] = raw[["premise", "hypothesis"]].apply(lambda s: s.str.strip())
    raw = raw[(raw["trigger"] == "manner") & (raw["environment"] == "neg")]
    items = raw.groupby(["premise", "hypothesis"])
    only_e = items["predifined_label"].agg(lambda s: set(s) == {"entailment"})
    share = items["human_selection"].agg(lambda s: (s == "entailment").mean())[only_e]
    table = projection.human_table(real_con).set_index(["dataset", "trigger", "operator"])
    cell = table.loc[("propres", "manner", "negation")]
    assert cell["n"] == len(share) == 10 and cell["family"] == "manner"
    assert cell["human"] == pytest.approx(share.mean()) and cell["human_low"] < cell["human"] < cell["human_high"]
    assert table.loc[("propres", "change_of_state", "negation"), "family"] == "change_of_state"


@pytest.mark.parametrize(
    "file, line, column, value, field, problem",
    [
        ("tsv/negation_again.tsv", 5, 3, "entailed", "label", "expected one of"),
        ("tsv/negation_again.tsv", 5, 7, "dev", "split", "expected train or test"),
        (propres.HUMAN, 9, 5, "maybe", "human_selection", "expected one of"),
        (propres.HUMAN, 9, 6, "7", "match", "disagrees with the two labels"),
        (propres.HUMAN, 9, 0, "sideways", "environment", "expected one of"),
    ],
)
def test_a_broken_row_names_the_file_line_and_field(tmp_path, file, line, column, value, field, problem):
    root = tmp_path / "propres"
    shutil.copytree(shared("propres"), root)
    path = root / file
    path.chmod(0o644)
    separator = "\t" if file.endswith(".tsv") else ","
    lines = path.read_text().split("\n")
    fields = lines[line - 1].split(separator)
    fields[column] = value
    lines[line - 1] = separator.join(fields)
    path.write_text("\n".join(lines))
    with pytest.raises(DataError) as found:
        load(root)
    assert found.value.line == line and found.value.field == field and problem in found.value.problem
    assert path.name in str(found.value)


@pytest.mark.parametrize("dataset", ["propres", "projective_probability"])
@pytest.mark.parametrize("page", ["pages/explore.py", "pages/slices.py", "pages/map.py", "pages/example.py"])
def test_the_new_datasets_open_on_the_generic_pages_without_page_code(open_page, real_store, dataset, page):
    at = open_page(real_store, page, {"dataset": dataset})
    assert not at.exception, at.exception
    assert not [e.value for e in at.error], [e.value for e in at.error]
    assert at.session_state["dataset"] == dataset  # the page took it (a refused link would name it and fall back)


def test_template_against_people_per_cell_gives_source_md_shares_and_a_cell_from_the_csv(real_con):
    table = projection.template_vs_people(real_con, "propres")
    weighted = (table["judgements differing"] * table["judgements"]).groupby(table["operator"]).sum()
    per_operator = (weighted / table.groupby("operator")["judgements"].sum()).round(3).to_dict()
    assert per_operator == {  # SOURCE.md: judgements that differ from the template
        "modal": 0.312,
        "question": 0.225,
        "negation": 0.223,
        "conditional": 0.213,
        "unembedded": 0.065,
    }
    raw = pd.read_csv(shared("propres") / propres.HUMAN)
    raw[["premise", "hypothesis"]] = raw[["premise", "hypothesis"]].apply(lambda s: s.str.strip())
    cell = raw[(raw["trigger"] == "manner") & (raw["environment"] == "neg")]
    items = cell.groupby(["premise", "hypothesis"])
    template = items["predifined_label"].agg(lambda s: s.iloc[0])
    votes = items["human_selection"].agg(lambda s: set(s.value_counts()[lambda c: c == c.max()].index))
    differs = [t not in v for t, v in zip(template, votes)]
    row = table.set_index(["trigger", "operator"]).loc[("manner", "negation")]
    assert row["items"] == len(differs) == 20 and row["majority differs"] == pytest.approx(sum(differs) / 20)
    assert row["judgements differing"] == pytest.approx((cell["predifined_label"] != cell["human_selection"]).mean())
    assert projection.template_vs_people(real_con, "nope").empty  # NOPE's gold is the crowd's: nothing to set beside
