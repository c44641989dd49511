"""Endpoints under a hostile OpenAI-compatible server (issue 45 items 15 and 16), a real HTTP server on 127.0.0.1
(tests/hostile_endpoint.py): NaN or infinite log-probabilities are never stored as probabilities, a server that
reports more tokens than max_tokens stops the run at its first answer, and a small --max-cost makes progress while
requests are in flight instead of stopping at $0."""

from __future__ import annotations

import json

import pytest

from backend.cli.main import main as cli
from backend.execution import batch, runs
from backend.models import loading
from backend.models.endpoints import client, spend
from backend.store.connection import connect
from tests.helpers.hostile_endpoint import MODEL, hostile

NAME = "hostile"


@pytest.fixture()
def server():
    with hostile() as running:
        yield running


@pytest.fixture()
def store(server, real_store, tmp_path, monkeypatch):
    """A copy of the real store, with the hostile server registered as the endpoint NAME in a data folder of its own."""
    data, copy = tmp_path / "data", tmp_path / "lab.duckdb"
    data.mkdir()
    copy.write_bytes(real_store.read_bytes())
    monkeypatch.setenv("PLAB_DATA_DIR", str(data))
    assert cli(["models", "add", NAME, "--base-url", server.url, "--model", MODEL, "--max-concurrency", "1"]) == 0
    yield copy
    loading.unload(NAME)


def _endpoint(server, tmp_path, **limits) -> client.Endpoint:
    settings = client.Settings(name=NAME, base_url=server.url, model=MODEL, max_retries=0, **limits)
    return client.Endpoint(settings, cache_path=tmp_path / "cache.sqlite")


def test_a_server_that_ignores_max_tokens_stops_the_run_at_its_first_answer(server, tmp_path):
    server.mode = "greedy"  # every answer reports 5,000 output tokens, whatever max_tokens says
    model = _endpoint(server, tmp_path, max_concurrency=1, price_out=1000.0)  # $0.001 per output token
    budget = spend.Budget(limit=0.5)
    prompts = [f"Question {i}?" for i in range(6)]
    with pytest.raises(spend.BudgetReached, match="reported 5,000 output tokens for max_tokens 8"):
        model.complete(prompts, max_tokens=8, budget=budget)
    assert server.requests == 1  # no further request once the server broke max_tokens
    assert budget.spent == pytest.approx(5.0, abs=0.01)  # what it reported is charged, once, and said
    assert spend.spent_today(NAME, tmp_path / "cache.sqlite") == pytest.approx(budget.spent)


def test_a_small_cap_is_reached_one_request_at_a_time_not_refused_for_what_is_in_flight(server, tmp_path):
    model = _endpoint(server, tmp_path, max_concurrency=4, price_out=25.0)  # ≤ 8 tokens: at most $0.0002 each
    budget = spend.Budget(limit=0.0005)  # fits two requests' worst cases at once, not four
    done = model.complete([f"Question {i}?" for i in range(5)], max_tokens=8, budget=budget)
    assert [c.text for c in done] == ["yes"] * 5 and server.requests == 5  # each used 1 token: $0.000025
    assert budget.spent == pytest.approx(5 * 25 / 1e6) and budget.spent <= budget.limit and budget.reserved == 0
    refused = spend.Budget(limit=0.0001)  # below one request's worst case: stopped before sending anything
    with pytest.raises(spend.BudgetReached, match=r"--max-cost \$0.0001"):
        model.complete(["A new question?"], max_tokens=8, budget=refused)
    assert server.requests == 5


def test_a_daily_cap_under_a_dollar_is_printed_with_its_digits(server, tmp_path):
    spend.charge(NAME, 0.001, tmp_path / "cache.sqlite")
    model = _endpoint(server, tmp_path, daily_cap=0.001, price_out=25.0)
    with pytest.raises(spend.BudgetReached, match=r"today's spending cap \$0.0010 would be passed"):
        model.complete(["Question?"], max_tokens=8)


def test_nan_and_infinite_log_probabilities_are_stored_as_no_probabilities(server, store):
    server.mode = "nan"
    run_id = batch.predict(store, runs.Request(NAME, "nope", split="main", limit=3, chunk=3), progress=False)
    con = connect(store, read_only=True)
    rows = con.execute("SELECT label, probs, text FROM predictions WHERE run_id = $r", {"r": run_id}).fetchall()
    con.close()
    assert len(rows) == 3
    for label, probs, text in rows:
        said = json.loads(text)
        assert label == "E" and probs is None  # the answer's label stands; no probabilities from NaN
        assert said["probabilities"].startswith("none: no usable log-probabilities")
        assert said["top_logprobs"] == [["yes", "nan"], ["no", "inf"]]


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("invalid", "sent a response that is not valid JSON"),
        ("truncated", "cut its response short"),  # not "start the server": it is up
    ],
)
def test_a_broken_answer_stops_the_run_unfinished_and_the_next_run_retries_its_items(server, store, capsys, mode, said):
    predict = [
        "--store",
        str(store),
        "predict",
        "--model",
        NAME,
        "--dataset",
        "nope",
        "--split",
        "main",
        "--limit",
        "3",
    ]
    server.mode = mode
    assert cli(predict) == 1  # not "complete" with exit 0
    assert said in capsys.readouterr().err
    con = connect(store, read_only=True)
    [(status, stored)] = con.execute(
        "SELECT r.status, count(p.example_id) FROM runs r LEFT JOIN predictions p USING (run_id) "
        "WHERE r.model_id = $m GROUP BY ALL",
        {"m": NAME},
    ).fetchall()
    con.close()
    assert status != "complete" and stored == 0  # no error row stands in for an answer
    server.mode, asked = "ok", server.requests
    assert cli(predict) == 0  # the server fixed: the same command asks again and completes
    assert server.requests - asked == 3


def test_the_model_that_answered_is_kept_with_each_prediction_and_a_swap_is_warned(server, store, caplog):
    run_id = batch.predict(store, runs.Request(NAME, "nope", split="main", limit=2, chunk=2), progress=False)
    server.mode = "swapped"  # /v1/models still lists hostile-1; the answers now name another model
    batch.predict(store, runs.Request(NAME, "nope", split="main", limit=4, chunk=2), progress=False)
    con = connect(store, read_only=True)
    said = con.execute(
        "SELECT text->>'$.server_model' FROM predictions p JOIN runs r USING (run_id) WHERE r.model_id = $m "
        "ORDER BY run_id, example_id",
        {"m": NAME},
    ).fetchall()
    con.close()
    # the first run's two answers, and the second run's: two from the cache (as first answered), two new
    assert sorted(s for (s,) in said) == ["another-model"] * 2 + [MODEL] * 4 and run_id.endswith("first2")
    assert "answered as model 'another-model', not the registered 'hostile-1'" in caplog.text
