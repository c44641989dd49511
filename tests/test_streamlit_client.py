"""The browserless dashboard user of the load benchmark (benchmarks.streamlit_client), on a served lab:
several sessions asking the Playground at once each get their own answer, stored once."""

import asyncio

import pytest

from backend.analysis.markdown import plain
from benchmarks.streamlit_client import PageFailed, Session

QUESTIONS = [f"Why did the observatory on island {n} close in 1990?" for n in range(6)]


async def ask(base: str, questions: list[str]) -> list[list[str]]:
    """One session typing `questions` into its open Playground, one after another: each rerun's texts."""
    async with Session.open(base, "playground") as tab:
        await tab.run()
        said = []
        for question in questions:
            await tab.run({tab.widget("text_area", "Question"): question, tab.widget("button", "Ask"): True})
            said.append(tab.texts())
        return said


async def three_askers(base: str) -> list[list[list[str]]]:
    return await asyncio.gather(*(ask(base, QUESTIONS[i::3]) for i in range(3)))


@pytest.mark.slow
def test_sessions_without_a_browser_ask_at_once_and_each_answer_is_stored(served_lab, lab):  # noqa: F811
    from backend.execution import live
    from backend.store.access import session

    for asked, texts in zip((QUESTIONS[i::3] for i in range(3)), asyncio.run(three_askers(served_lab))):
        for question, said in zip(asked, texts):
            assert f"**Question:** {question}" in said  # this session's own question, not another's
            assert any(f"stored in {plain('live/tiny-fp/detect')}" in text for text in said)  # escaped, as all run ids
    with session(lab["store"]) as con:
        stored = live.history(con, 100)
    # the lab is shared with other tests' questions: each of these is stored exactly once
    ours = stored.loc[(stored["run_id"] == "live/tiny-fp/detect") & stored["input"].isin(QUESTIONS), "input"]
    assert sorted(ours) == sorted(QUESTIONS)

    async def empty_question() -> None:
        async with Session.open(served_lab, "playground") as tab:
            await tab.run()
            await tab.run({tab.widget("text_area", "Question"): " ", tab.widget("button", "Ask"): True})

    with pytest.raises(PageFailed, match="question: empty"):  # the page's error box is reported, not missed
        asyncio.run(empty_question())
