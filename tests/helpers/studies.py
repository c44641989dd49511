"""Small judgement-study stores and their participants, shared by the study tests that need no ingest."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from backend.actions import studies as study_actions
from backend.identity import links
from backend.identity.actor import Actor
from backend.imports import datasets as user_datasets
from backend.imports.files import read
from backend.store import links as store_links
from backend.store.access import session
from backend.studies import collection
from tests.helpers.people import LOCAL


def item_store(path: Path, name: str, items: int, control: bool = False) -> Path:
    """A new store at `path` (no ingest) holding the dataset `name`: `items` items × conditions a and b, each an NLI
    row with its item and variant facets, and with `control` one control item (variant control)."""
    rows = [
        {"id": f"i{i}-{c}", "premise": f"Speaker {i} says ({c}).", "hypothesis": f"fact {i}", "label": "E"}
        | {"item": f"i{i}", "variant": c}
        for i in range(items)
        for c in ("a", "b")
    ]
    if control:
        rows.append({"id": "ctl0", "premise": "Is fact 0 true?", "hypothesis": "fact 0", "label": "N"})
        rows[-1] |= {"item": "ctl0", "variant": "control"}
    options = user_datasets.DatasetOptions(name=name, task="nli", columns={"example_id": "id"})
    bundle, _ = user_datasets.check(read(pd.DataFrame(rows), name=f"{name}.csv"), options)
    with session(path, create=True) as con:
        user_datasets.save(con, bundle)
    return path


def token_for(con, store, study_id: str, person: str) -> str:
    """The token of a new link to the study made for `person`."""
    study_actions.make_links(con, store, study_id, 1, people=[person], actor=LOCAL)
    found = store_links.listing(con, collection.object_of(study_id))
    return links.token(store, found[found["person"] == person].to_dict("records")[0])


def holder(con, store, study_id: str, person: str) -> Actor:
    """Who opens a new link to the study made for `person`."""
    return links.opened(con, store, token_for(con, store, study_id, person))


# Designs of each trial type (issue 63, item 6) over typed_items, as `str.format(name=...)` templates
BASE = "name: {name}\ndataset: typed-items\nitem: item\ncondition: variant\norder: {{seed: 3}}\n"
CHOICE = BASE + (
    'assignment: crossed\ntext: "{{input}}"\nquestion: "Which sounds better?"\ntrial: {{kind: forced_choice}}\n'
)
READING = BASE + (
    'text: "{{input}}"\ntrial: {{kind: reading, comprehension: {{question: "Was it {{hypothesis}}?", '
    'options: [yes, no], answer: "{{answer}}"}}}}\n'
)
MAZE = BASE + 'text: "{{input}}"\ntrial: {{kind: maze, foils: foil}}\n'


def typed_items():
    """The dataset typed-items: 6 items × conditions a and b, each a four-word sentence with its three Maze foils
    and the answer to its comprehension question."""
    rows = [
        {"id": f"i{i}-{c}", "premise": f"The cat {c}{i} slept.", "hypothesis": "asleep", "label": "E"}
        | {"item": f"i{i}", "variant": c, "foil": "ran blue into", "answer": "yes" if i % 2 else "no"}
        for i in range(6)
        for c in ("a", "b")
    ]
    options = user_datasets.DatasetOptions(name="typed-items", task="nli", columns={"example_id": "id"})
    return user_datasets.check(read(pd.DataFrame(rows), name="typed-items.csv"), options)[0]
