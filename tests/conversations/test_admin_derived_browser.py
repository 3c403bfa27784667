"""The "Derived" panels of a conversation's page in a real browser: headless Chromium driven by Selenium
against the live server, set up as the conversations admin's browser tests are
(``tests/conversations/test_admin_browser.py``).

acme's operator opens a conversation with summaries, facts, memories, vectors and a checkpoint: each
panel is on screen with its figures, the page fits 1280 and 1440 pixel windows without scrolling
sideways, and each link of the panels opens its admin page. globex has a conversation and a user of
the same ids with more of everything: the operator sees none of it, on the page or behind its links.
Screenshots go to ``$SCREENSHOT_DIR`` (default ``var/screenshots`` under the repository root).
"""

import uuid
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec

from conversations import services
from conversations.models import CacheRepair, Conversation
from tests.conversations.test_admin_browser import (  # noqa: F401 - the headless Chromium fixtures
    browser,
    driver,
    log_in,
    operator,
    screenshot,
    wait,
)
from tests.conversations.test_admin_derived import BOSTON, GLOBEX_SECRET, POTTERY, derived_of, extracting

CHANGELIST = "/admin/conversations/conversation/"
USER_ID = f"customer-{uuid.UUID(int=7)}"  # a long id, as production's are
LONG_VALUE = "a-single-unbroken-token-" * 12
GLOBEX_WORDS = ("Globex City", "globex-cp", "Globex keeps its quarterly secret", "awaits a cache repair")
PANELS = ["summaries", "facts", "memories", "search", "checkpoints", "cache"]
FIGURES = {
    "summaries": "1",
    "facts": "3",
    "memories": "2",
    "search": "2/2",
    "checkpoints": "2",
    "cache": "2/2",
}


@pytest.fixture
def acme_chat(transactional_db: Any, tenant: Any, other_tenant: Any) -> Conversation:
    """acme's conversation with something in every panel; globex's of the same ids with more."""
    for owner in (tenant, other_tenant):
        extracting(owner)
    conversation = derived_of(
        tenant,
        "support-chat",
        USER_ID,
        BOSTON,
        POTTERY,
        facts={"city": "Boston", "sister": "Ana", "notes": LONG_VALUE},
        checkpoints=[str(uuid.UUID(int=1)), str(uuid.UUID(int=2))],
    )
    services.cache_rebuild(tenant=tenant, conversation_id="support-chat", allow_empty=True)
    derived_of(
        other_tenant,
        "support-chat",
        USER_ID,
        GLOBEX_SECRET,
        BOSTON,
        POTTERY,
        facts={"city": "Globex City", "badge": "G-7", "floor": "13", "desk": "4"},
        checkpoints=["globex-cp-1", "globex-cp-2", "globex-cp-3"],
    )
    CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id="support-chat")
    return conversation


def open_page(web: WebDriver, live_server: Any, conversation: Conversation) -> None:
    web.get(f"{live_server.url}{CHANGELIST}{conversation.pk}/change/")
    wait(web).until(ec.visibility_of_element_located((By.ID, "derived")))


def panel(web: WebDriver, name: str) -> Any:
    return web.find_element(By.CSS_SELECTOR, f'[data-panel="{name}"]')


def sideways(web: WebDriver) -> dict[str, float]:
    """How far the page is wider than the window, and how far any panel reaches past its right edge."""
    return web.execute_script(
        """
        const page = document.documentElement;
        const panels = [...document.querySelectorAll("#derived .memory-derived__panel, #derived .memory-derived__panel *")];
        return {
            page: Math.max(0, page.scrollWidth - page.clientWidth, page.scrollWidth - window.innerWidth),
            panels: Math.max(0, ...panels.map((e) => e.getBoundingClientRect().right - page.clientWidth)),
        };
        """
    )


def test_the_panels_show_their_figures_and_fit_1280_and_1440_pixel_windows(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    operator: Any,  # noqa: F811 - the imported fixture
    acme_chat: Conversation,
) -> None:
    log_in(browser, live_server)
    size = browser.get_window_size()
    try:
        for width in (1280, 1440):
            browser.set_window_size(width, 900)
            open_page(browser, live_server, acme_chat)

            shown = [element.get_attribute("data-panel") for element in browser.find_elements(By.CSS_SELECTOR, "[data-panel]")]
            assert shown == PANELS
            for name, figure in FIGURES.items():
                element = panel(browser, name)
                browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
                assert element.is_displayed()
                assert element.find_element(By.CSS_SELECTOR, ".memory-derived__figure").text == figure, name
            assert "cached · 2/2" in panel(browser, "cache").text
            assert "No cache repair pending." in panel(browser, "cache").text
            assert "Caroline lives in Boston." in panel(browser, "memories").text
            assert "support-chat, message 1" in panel(browser, "memories").text
            assert "2 of the 2 assistant and user messages with text are embedded" in panel(browser, "search").text
            assert sideways(browser) == {"page": 0, "panels": 0}
            screenshot(browser, f"conversation-derived-{width}.png")
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_each_link_of_the_panels_opens_its_admin_page(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    operator: Any,  # noqa: F811 - the imported fixture
    acme_chat: Conversation,
) -> None:
    log_in(browser, live_server)
    open_page(browser, live_server, acme_chat)
    links = [
        (element.get_attribute("href"), element.text) for element in browser.find_elements(By.CSS_SELECTOR, "#derived a[href]")
    ]
    expected_pages = {
        "/admin/summaries/summary/": 2,  # the summary, the conversation's summaries
        "/admin/facts/userfact/": 4,  # three facts, the user's facts
        "/admin/extraction/memory/": 3,  # two memories, the user's memories
        "/admin/search/messageembedding/": 1,
        "/admin/checkpoints/checkpoint/": 3,  # two checkpoints, the conversation's checkpoints
    }
    for prefix, count in expected_pages.items():
        assert sum(prefix in href for href, _ in links) == count, prefix

    for index in range(len(links)):
        open_page(browser, live_server, acme_chat)
        element = browser.find_elements(By.CSS_SELECTOR, "#derived a[href]")[index]
        href = element.get_attribute("href")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
        browser.execute_script("arguments[0].click();", element)

        wait(browser).until(lambda d, href=href: d.current_url == href and d.find_elements(By.ID, "content"))
        title = browser.title
        assert "Not Found" not in title, href
        assert "403" not in title, href
        assert not browser.find_elements(By.CSS_SELECTOR, ".errornote"), href  # no "?e=1" for a refused filter
        source = browser.page_source
        for words in GLOBEX_WORDS:
            assert words not in source, (href, words)
        if "/admin/search/messageembedding/" in href:
            assert len(browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")) == 2
        if href.endswith(f"/admin/facts/userfact/?user_id={USER_ID}"):
            assert len(browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")) == 3


def test_the_operator_never_sees_the_other_tenants_conversation_or_its_figures(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    operator: Any,  # noqa: F811 - the imported fixture
    acme_chat: Conversation,
    other_tenant: Any,
) -> None:
    globex_chat = Conversation.objects.for_tenant(other_tenant).get(conversation_id="support-chat")
    log_in(browser, live_server)

    open_page(browser, live_server, acme_chat)
    page = browser.find_element(By.ID, "derived").text
    for words in GLOBEX_WORDS:
        assert words not in page
    assert panel(browser, "facts").find_element(By.CSS_SELECTOR, ".memory-derived__figure").text == "3"  # globex's: 4
    assert panel(browser, "checkpoints").find_element(By.CSS_SELECTOR, ".memory-derived__figure").text == "2"  # globex's: 3

    browser.get(f"{live_server.url}{CHANGELIST}{globex_chat.pk}/change/")

    heading = wait(browser).until(ec.presence_of_element_located((By.TAG_NAME, "h1")))
    assert "Not Found" in heading.text or "404" in heading.text
    assert not browser.find_elements(By.ID, "derived")
    for words in GLOBEX_WORDS:
        assert words not in browser.page_source
