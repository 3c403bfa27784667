"""The memories admin in a real browser: headless Chromium driven by Selenium against the live server,
set up as the conversations admin's browser tests are (``tests/conversations/test_admin_browser.py``).

An operator of acme logs in, finds a user's memory, reads its history, follows the link to the message
it was read from, corrects its text and deletes it, which takes it back and keeps it with its history.
Screenshots go to ``$SCREENSHOT_DIR`` (default ``var/screenshots`` under the repository root).
"""

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec

from extraction.models import Memory, MemoryChange
from tenants import services as tenant_services
from tests.conversations.test_admin_browser import (  # noqa: F401 - the headless Chromium fixtures
    PASSWORD,
    USERNAME,
    browser,
    driver,
    log_in,
    screenshot,
    wait,
)
from tests.extraction.test_admin import grant_memory_permissions, memory_of
from tests.extraction.test_services import a_memory, apply, conversation_of, first_source

MEMORIES = "/admin/extraction/memory/"


@pytest.fixture
def operator(transactional_db: Any, tenant: Any) -> Any:
    return grant_memory_permissions(tenant_services.operator_create(tenant=tenant, username=USERNAME, password=PASSWORD))


@pytest.fixture
def moved(transactional_db: Any, tenant: Any, other_tenant: Any) -> Memory:
    """Caroline's memory, read as "lives in Boston" from c1, then updated to Denver from c2; and a
    globex memory that must never show."""
    _, memory = a_memory(tenant)
    later = conversation_of(tenant, "c2", texts=("We moved to Denver in June.",))
    update = {
        "op": "update",
        "memory_id": str(memory.memory_id),
        "text": "Caroline lives in Denver.",
        "sources": [first_source(tenant, later)],
    }
    apply(tenant, later, [update])
    memory_of(other_tenant, "c-globex", "caroline", "Globex's Caroline keeps bees.")
    return Memory.objects.for_tenant(tenant).get(version_of__isnull=True)


def history_rows(page: WebDriver) -> list[list[str]]:
    rows = page.find_elements(By.CSS_SELECTOR, ".field-history table.memory-history tbody tr")
    return [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def test_an_operator_reads_a_memorys_history_follows_its_source_corrects_it_and_deletes_it(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    operator: Any,
    moved: Memory,
    tenant: Any,
) -> None:
    log_in(browser, live_server)

    # Find the user's memory.
    browser.get(live_server.url + MEMORIES)
    box = wait(browser).until(ec.presence_of_element_located((By.ID, "searchbar")))
    box.send_keys("caroline", Keys.ENTER)
    wait(browser).until(lambda d: "q=" in d.current_url and d.find_elements(By.ID, "result_list"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert sorted(row.find_element(By.CSS_SELECTOR, ".field-text_preview").text for row in rows) == [
        "Caroline lives in Boston.",  # the version the update replaced, kept as a memory of its own
        "Caroline lives in Denver.",
    ]
    rows = [row for row in rows if row.find_element(By.CSS_SELECTOR, ".field-text_preview").text.endswith("Denver.")]
    assert "Globex" not in browser.page_source
    screenshot(browser, "memory-list.png", full_page=False)
    rows[0].find_element(By.CSS_SELECTOR, "th.field-user_id a").click()

    # Its history, newest first, with the text each update replaced.
    wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".field-history table.memory-history")))
    assert f"/{moved.pk}/change/" in browser.current_url
    history = history_rows(browser)
    assert [row[0] for row in history] == ["update", "add"]
    assert history[0][2:4] == ["Caroline lives in Denver.", "Caroline lives in Boston."]
    [past] = browser.find_elements(By.CSS_SELECTOR, ".field-versions ol.memory-versions a")
    assert past.text == "Caroline lives in Boston."
    screenshot(browser, "memory-history.png")

    # The message it was updated from, in its conversation's transcript.
    sources = browser.find_elements(By.CSS_SELECTOR, ".field-sources a.memory-source")
    assert [link.text for link in sources] == ["c1, message 1", "c2, message 1"]
    sources[1].click()
    said = wait(browser).until(ec.visibility_of_element_located((By.ID, "seq-1")))
    assert browser.current_url.endswith("?page=1#seq-1")
    assert "We moved to Denver in June." in said.text
    browser.back()

    # A correction: the text typed, the old one kept in the history.
    text = wait(browser).until(ec.visibility_of_element_located((By.ID, "id_text")))
    text.clear()
    text.send_keys("Caroline lives in Cambridge, MA.")
    browser.find_element(By.NAME, "_continue").click()
    success = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert "was changed successfully" in success.text
    assert not browser.find_elements(By.CSS_SELECTOR, ".errornote, .errorlist")
    history = history_rows(browser)
    assert [row[0] for row in history] == ["update", "update", "add"]
    assert history[0][2:4] == ["Caroline lives in Cambridge, MA.", "Caroline lives in Denver."]
    assert history[0][7] == f"admin:{USERNAME}"
    corrected = Memory.objects.for_tenant(tenant).get(version_of__isnull=True)
    assert (corrected.text, corrected.valid_from, corrected.current) == (
        "Caroline lives in Cambridge, MA.",
        moved.valid_from,
        True,
    )

    # Deleting takes it back and keeps it.
    browser.find_element(By.CSS_SELECTOR, "a.deletelink").click()
    confirm = wait(browser).until(ec.element_to_be_clickable((By.ID, "confirm-invalidate")))
    assert "Nothing is erased" in browser.find_element(By.ID, "content").text
    screenshot(browser, "memory-invalidate.png", full_page=False)
    confirm.click()
    success = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert "Invalidated 1 memory" in success.text
    assert f"/{moved.pk}/change/" in browser.current_url
    assert [row[0] for row in history_rows(browser)] == ["delete", "update", "update", "add"]
    kept = Memory.objects.for_tenant(tenant).get(version_of__isnull=True)
    assert not kept.current
    assert MemoryChange.objects.for_tenant(tenant).filter(memory=kept).count() == 4
