# %% [markdown]
# # Presupposition Lab from a notebook
#
# Run as a script (`.venv/bin/python scripts/notebook_example.py`) or open it as a notebook (each `# %%`
# is a cell; Jupyter reads it with jupytext, VS Code as is). It works while the dashboard runs: each call
# opens the store only for itself, and the run imported below shows up in the open dashboard at its next rerun.
# `PLAB_STORE` picks the store, as everywhere.

# %%
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent) if "__file__" in globals() else ".")
from backend.api import Lab  # noqa: E402

lab = Lab()
print(lab.datasets()[["dataset_id", "examples", "task", "labels", "headline_splits"]].to_string(index=False))

# %% [markdown]
# ## Examples filtered by facets, and a paper model's predictions joined with them

# %%
clefts = lab.examples("nope", split="main", trigger_type=["clefts"])
print(f"{len(clefts)} cleft items on NOPE main; gold labels:", clefts["gold_label"].value_counts().to_dict())

paper = "nope/RoBERTa-large/mnli-snli-anli-fever/1"
predictions = lab.predictions(paper, split="main")
print(
    predictions[["example_id", "trigger_type", "polarity", "gold_label", "label", "correct"]]
    .head()
    .to_string(index=False)
)

# %% [markdown]
# ## The metrics the pages show, with 95% bootstrap intervals

# %%
for polarity in ("non-negated", "negated"):
    summary = lab.metrics("nope", paper, split="main", polarity=polarity)
    print(f"RoBERTa on main, {polarity}: accuracy {summary['accuracy']}, macro-F1 {summary['macro_f1']}")

# %% [markdown]
# ## Your own model: a DataFrame becomes a run
# Here a toy rule: "the presupposition survives unless the premise is negated". Rows are matched to
# examples by premise + hypothesis text; the report says what matched and what was wrong.

# %%
items = lab.examples("nope")
negated = items["input"].str.contains(r"\b(?:not|n't|never)\b", case=False)
mine = items.assign(premise=items["input"], label=negated.map({True: "neutral", False: "entailment"}))
report = lab.import_run(
    mine[["premise", "hypothesis", "label"]],
    dataset="nope",
    model="negation-rule",
    notes="toy rule from scripts/notebook_example.py",
    replace=True,
)
print(report.summary())

# %%
rule = "nope/user/negation-rule"
for run in (paper, rule):
    print(run, lab.metrics("nope", run, split="main")["accuracy"])
board = lab.leaderboard()
print(
    board[board["dataset"] == "nope"]
    .head(8)[["run", "kind", "split", "value", "low", "high", "n"]]
    .to_string(index=False)
)

# %%
lab.delete_run(rule)  # your runs can be deleted (built-in ones cannot)
print("deleted", rule)
