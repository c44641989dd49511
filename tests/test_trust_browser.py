"""What a new user met (issue 45), seen in Chromium: ids copied from a page and pasted into a link open what they
named."""

from __future__ import annotations

import pytest

from tests.conftest import QA_RUN
from tests.test_browser import browser_page, serve, shows

JOINER = "\u2060"


@pytest.fixture(scope="module")
def served_lab(lab):
    yield from serve({"PLAB_STORE": str(lab["store"]), "PLAB_DATA_DIR": str(lab["data"])})


@pytest.mark.slow
def test_an_id_copied_from_a_page_and_pasted_into_a_link_opens_it_in_chromium(served_lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = browser_page(p)
        shows(page, served_lab, "example?dataset=ifqa&example=S-dev-0", "Prompt sent and response", "example-ids")
        label = page.locator("[data-testid=stExpander] summary").filter(has_text="Prompt sent and response")
        copied = label.first.inner_text().split("Prompt sent and response: ")[1].strip()
        assert copied == QA_RUN  # "@1" and "@3" are no e-mail addresses: nothing invisible was put in
        # a link whose id carries the joiner (an e-mail-shaped id, or a copy from an older page) opens it too
        for pasted in (copied, QA_RUN.replace("@", "@" + JOINER)):
            shows(page, served_lab, f"retrieval?example=S-dev-0&qa_run={pasted}", "A row's open link", "retrieval-ids")
            assert page.get_by_text("is not one of the choices here").count() == 0, page.inner_text("body")[:1500]
        browser.close()
