"""Terminal commands, a notebook and the Import page write to the store a running dashboard serves:
nothing waits for the dashboard to stop, racing writers lose nothing, and what they write shows in
the open dashboard (real `scripts/run.sh` server, real Chromium, real second processes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from backend.store.access import session
from tests.helpers.browser import SHOTS, browser_page, mark, serve, shows

ROOT = Path(__file__).resolve().parent.parent
ROBERTA = "nope/RoBERTa-large/mnli-snli-anli-fever/1"


@pytest.fixture()
def copy_of_lab(lab, tmp_path) -> dict:
    store = tmp_path / "lab.duckdb"
    shutil.copy(lab["store"], store)
    return {"store": store, "data": lab["data"]}


@pytest.fixture()
def served_copy(copy_of_lab):
    yield from serve({"PLAB_STORE": str(copy_of_lab["store"]), "PLAB_DATA_DIR": str(copy_of_lab["data"])})


def cli(store: Path, data: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PLAB_STORE": str(store), "PLAB_DATA_DIR": str(data), "PLAB_STORE_WAIT": "60"}
    return subprocess.Popen(
        [sys.executable, "-m", "backend", *args],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def finish(process: subprocess.Popen) -> str:
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0, out
    return out


def label_file(store: Path, path: Path, run: str = ROBERTA, shuffle: int = 0) -> Path:
    with session(store) as con:
        frame = con.execute(
            """SELECT e.input AS premise, e.hypothesis, p.label AS predicted_label FROM predictions p
                               JOIN examples e ON e.dataset_id = 'nope' AND e.example_id = p.example_id
                               WHERE p.run_id = $r""",
            {"r": run},
        ).df()
    frame.sample(frac=1, random_state=shuffle).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_commands_and_a_notebook_write_while_the_dashboard_runs_and_it_shows_their_runs(
    served_copy, copy_of_lab, tmp_path
):
    from playwright.sync_api import sync_playwright

    store, data = copy_of_lab["store"], copy_of_lab["data"]
    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_copy, "", "Models", "side-by-side-before")  # the dashboard has the store in use
        racing = [
            cli(
                store,
                data,
                "import-run",
                str(label_file(store, tmp_path / f"r{i}.csv", shuffle=i)),
                "--dataset",
                "nope",
                "--model",
                f"racer-{i}",
            )
            for i in range(3)
        ]
        predict = cli(
            store, data, "predict", "--model", "tiny-fp", "--dataset", "falseqa", "--split", "test", "--limit", "40"
        )
        notebook = subprocess.run(
            [sys.executable, "scripts/notebook_example.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PLAB_STORE": str(store), "PLAB_DATA_DIR": str(data)},
        )
        for process in racing + [predict]:
            page.reload()  # the dashboard keeps reading while the others write
            finish(process)
        assert notebook.returncode == 0, notebook.stderr
        assert "OK: nothing rejected" in notebook.stdout and "deleted nope/user/negation-rule" in notebook.stdout
        status = finish(cli(store, data, "status"))
        evaluated = finish(cli(store, data, "evaluate", "--dataset", "nope", "--compare", ROBERTA, "nope/user/racer-0"))
        assert (
            "falseqa" in status
            and "McNemar p" in evaluated
            and "| main    | 2386 |        79.21 |        79.21 |" in evaluated
        )
        with session(store) as con:  # racing writers lost nothing: three complete runs, every row once
            counts = con.execute("""SELECT run_id, count(*) FROM predictions WHERE run_id LIKE 'nope/user/racer-%'
                                    GROUP BY 1 ORDER BY 1""").fetchall()
            predicted = con.execute(
                "SELECT status FROM runs WHERE run_id = 'falseqa/tiny-fp/detect/test/first40'"
            ).fetchone()
        assert counts == [(f"nope/user/racer-{i}", 2732) for i in range(3)] and predicted == ("complete",)
        shows(page, served_copy, "?board=nope", "Models", "side-by-side-after")  # a rerun, no restart
        assert mark(page, "point", "run: nope/user/racer-2").count() == 2  # its dot on main and on adv
        shows(
            page,
            served_copy,
            "explore?dataset=nope&run_a=nope/user/racer-1&split=main",
            "select a row to open it",
            "side-by-side-explore",
        )
        page.get_by_text("79.2%", exact=True).first.wait_for(
            timeout=60_000
        )  # the paper run's accuracy on main, re-imported
        browser.close()


CHOSEN = "[data-testid=stSelectbox] input[role=combobox]"  # the Import page's first selectbox: the dataset


@pytest.mark.slow
def test_the_import_page_uploads_checks_saves_and_the_run_shows_in_explore_and_on_the_overview(
    served_copy, copy_of_lab, tmp_path
):
    from playwright.sync_api import sync_playwright

    upload = label_file(copy_of_lab["store"], tmp_path / "my-roberta.csv")
    unnamed = tmp_path / "preds.csv"  # names no dataset
    shutil.copy(upload, unnamed)
    broken = tmp_path / "broken_nope.csv"  # names its dataset
    pd.read_csv(upload).assign(predicted_label=lambda f: f["predicted_label"].where(f.index > 2, "maybe")).to_csv(
        broken, index=False
    )
    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_copy, "imports", "Choose a file to check", "import-empty")
        dataset = page.get_by_role("combobox").first
        dataset.wait_for()
        limit = page.locator("[data-testid=stFileUploaderDropzoneInstructions]").first.inner_text()
        assert "1GB" in limit.replace(" ", "") or "1024MB" in limit.replace(" ", ""), limit  # as the README says
        # a NOPE file checked against the default dataset: 0 matched, and the dataset its rows do match is named
        page.locator("[data-testid=stFileUploaderDropzoneInput]").first.set_input_files(str(unnamed))
        page.get_by_text("Check the file to see the validation report").first.wait_for(
            timeout=60_000
        )  # upload rerun done
        assert dataset.input_value() == "commitmentbank"  # the first dataset: the file's name names none
        page.get_by_role("button", name="Check").click()
        page.get_by_text("Its rows match nope best: 2,732 of 2,732 rows").first.wait_for(timeout=120_000)
        page.get_by_text("unmatched: 2,732 rows").first.wait_for(timeout=30_000)  # rows, not rows + the file's problem
        page.get_by_role("button", name="Use nope").click()
        page.get_by_text("changed since the last check").first.wait_for(timeout=60_000)
        assert dataset.input_value() == "nope"
        # choose another dataset by hand: a file whose name names a dataset picks it
        dataset.fill("commitmentbank")
        dataset.press("Enter")
        page.wait_for_function(f"() => document.querySelector('{CHOSEN}').value === 'commitmentbank'", timeout=60_000)
        page.locator("[data-testid=stFileUploaderDropzoneInput]").first.set_input_files(str(broken))
        page.wait_for_function(f"() => document.querySelector('{CHOSEN}').value === 'nope'", timeout=60_000)
        page.get_by_text("changed since the last check").first.wait_for(timeout=60_000)
        page.get_by_role("button", name="Check").click()
        page.get_by_text("REJECTED").first.wait_for(timeout=90_000)
        page.get_by_text("unknown label: 3 rows").first.wait_for(timeout=30_000)  # lines 2-4, listed in the table too
        page.screenshot(path=str(SHOTS / "import-rejected.png"), full_page=True)
        page.locator("[data-testid=stFileUploaderDropzoneInput]").first.set_input_files(str(upload))
        page.get_by_text("changed since the last check").first.wait_for(timeout=60_000)  # the upload's rerun is done
        page.get_by_role("button", name="Check").click()
        page.get_by_text("OK: nothing rejected").first.wait_for(timeout=90_000)
        page.get_by_role("button", name="Save as a run").click()
        page.get_by_text("Saved 2,732 predictions as a run.").wait_for(timeout=90_000)
        page.screenshot(path=str(SHOTS / "import-saved.png"), full_page=True)
        page.get_by_role("link", name="Open it in Explore").click()
        page.get_by_text("select a row to open it").first.wait_for(timeout=90_000)
        assert "run_a=nope%2Fuser%2Fmy-roberta" in page.url
        page.get_by_text("76.4%", exact=True).first.wait_for(timeout=60_000)  # the paper run's, on every split it has
        assert page.get_by_text("Pooled over every split").count() == 1  # the import's link: all its predictions
        shows(page, served_copy, "?board=nope", "Models", "import-overview")
        assert mark(page, "point", "run: nope/user/my-roberta").count() == 2
        browser.close()
