"""The health page in a real browser: headless Chromium driven by Selenium against the live server,
set up as the conversations admin's browser tests are (``tests/conversations/test_admin_browser.py``).

The page fits an operator's screen (1280, 1440 and 1920 wide) without scrolling sideways, every word
of its tables and figures whole on one line (measured in the browser, with a worker killed, a long
node name and Redis unreachable), draws its charts with a flat zero visible above the axis,
refreshes its panel in place (the page is not reloaded: what a script set on it survives), and an
operator of acme sees nothing of globex, before and after a refresh. Screenshots go to
``$SCREENSHOT_DIR`` (default ``var/screenshots`` under the repository root).
"""

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec

from console import services, tasks, views
from console.models import WorkerHeartbeat
from conversations.models import DeadLetter
from tests.conversations.test_admin_browser import (  # noqa: F401 - the headless Chromium fixtures
    PASSWORD,
    SUPERUSER,
    USERNAME,
    browser,
    driver,
    log_in,
    screenshot,
    superuser,
    wait,
)
from tests.conversations.test_admin_browser import operator as acme_operator  # noqa: F401 - a fixture
from tests.conversations.test_api import redis_unreachable

PAGE = "/admin/health/"

SIDEWAYS = """
const page = document.documentElement;
return Math.max(0, page.scrollWidth - page.clientWidth, page.scrollWidth - window.innerWidth);
"""


@pytest.fixture
def samples(transactional_db: Any) -> None:
    """Five samples, one sampler interval apart, the last one now."""
    taken = [services.health_sample_take() for _ in range(5)]
    now = timezone.now()
    for index, sample in enumerate(taken):
        sample.taken_at = now - timedelta(seconds=tasks.SAMPLE_SECONDS * (len(taken) - 1 - index))
        sample.save(update_fields=["taken_at"])


@pytest.fixture
def quick_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The panel fetched every 2 s rather than 10 (the live server runs in this process)."""
    monkeypatch.setattr(views, "REFRESH_SECONDS", 2)


def dead_letters(tenant: Any, count: int) -> None:
    for number in range(count):
        DeadLetter.unscoped.create(
            tenant=tenant,
            task_name="conversations.tasks.messages_persist",
            payload={"tenant_slug": tenant.slug, "conversation_id": f"{tenant.slug}-{number}"},
            error="IntegrityError: a refused row",
        )


def open_page(browser: WebDriver, live_server: Any) -> None:  # noqa: F811 - the imported fixture's name
    browser.get(live_server.url + PAGE)
    wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".memory-health__panel")))


def test_the_panel_refreshes_in_place_without_reloading_the_page(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    superuser: Any,  # noqa: F811 - the imported fixture
    worker: Any,
    tenant: Any,
    quick_refresh: None,
) -> None:
    log_in(browser, live_server, SUPERUSER, PASSWORD)
    open_page(browser, live_server)
    browser.execute_script("window.memoryHealthMarker = 'still the same page';")
    first = browser.find_element(By.CSS_SELECTOR, ".memory-health__panel").get_attribute("data-checked-at")
    assert "dead letter" not in browser.find_element(By.ID, "memory-health-panel").text

    dead_letters(tenant, 1)

    wait(browser).until(lambda d: "1 dead letter waits" in d.find_element(By.ID, "memory-health-panel").text)
    assert browser.execute_script("return window.memoryHealthMarker;") == "still the same page"
    assert browser.find_element(By.CSS_SELECTOR, ".memory-health__panel").get_attribute("data-checked-at") != first
    assert int(browser.find_element(By.ID, "memory-health").get_attribute("data-refreshes")) >= 1
    assert browser.find_element(By.ID, "memory-health-refresh").text.startswith("Refreshed at")


def test_a_tenants_operator_sees_nothing_of_another_tenant_before_or_after_a_refresh(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    acme_operator: Any,  # noqa: F811 - the imported fixture
    worker: Any,
    tenant: Any,
    other_tenant: Any,
    samples: None,
    quick_refresh: None,
) -> None:
    dead_letters(tenant, 1)
    dead_letters(other_tenant, 4)
    services.health_sample_take()  # the last slot's sample, with them
    log_in(browser, live_server, USERNAME, PASSWORD)
    open_page(browser, live_server)

    seen = [browser.page_source]
    dead_letters(other_tenant, 3)
    browser.execute_script("window.memoryHealthMarker = 1;")
    wait(browser).until(lambda d: d.find_element(By.ID, "memory-health").get_attribute("data-refreshes"))
    seen.append(browser.page_source)

    assert browser.execute_script("return window.memoryHealthMarker;") == 1
    for source in seen:
        assert "globex" not in source
        assert "Tenant acme only" in source
        assert "Dead letters waiting: latest 1" in source
        assert "1 dead letter waits for a replay" in source
        assert "Persist queue" not in source
    screenshot(browser, "health-tenant.png")


# Every word of a table (or a figure) drawn on more than one line: a word broken to fit a column.
BROKEN_WORDS = """
const broken = [];
for (const box of document.querySelectorAll('.memory-health table, .memory-health__figures')) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const word of node.textContent.matchAll(/\\S+/g)) {
            const range = document.createRange();
            range.setStart(node, word.index);
            range.setEnd(node, word.index + word[0].length);
            const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
            if (lines.size > 1) {
                broken.push(word[0]);
            }
        }
    }
}
return broken;
"""

# How far each table reaches past its section (0: it fits its column).
TABLE_OVERFLOW = """
return [...document.querySelectorAll('.memory-health table')].map(
    (table) => Math.max(0, Math.ceil(table.getBoundingClientRect().right - table.parentElement.getBoundingClientRect().right))
);
"""

# Each chart's line against its axis, in pixels: how far the line's lowest point is above the axis.
LINE_ABOVE_AXIS = """
return [...document.querySelectorAll('.memory-chart svg')].filter((svg) => svg.querySelector('polyline')).map((svg) => {
    const axis = svg.querySelector('.memory-chart__axis').getBoundingClientRect();
    const line = svg.querySelector('polyline').getBoundingClientRect();
    return axis.top - line.bottom;
});
"""


@pytest.mark.parametrize("width", [1280, 1440, 1920])
def test_the_page_fits_the_screen_keeps_every_word_whole_and_draws_its_charts_with_a_worker_killed_and_redis_down(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    superuser: Any,  # noqa: F811 - the imported fixture
    worker: Any,
    samples: None,
    tenant: Any,
    width: int,
) -> None:
    dead_letters(tenant, 2)
    now = timezone.now()
    # A worker killed without a word, another on the derived queue with a long node name, as hosts name them.
    services.heartbeat_record(
        hostname="write-2718281@ip-10-42-17-3.eu-west-1.compute.internal",
        pid=2718281,
        queues=[settings.MEMORY_QUEUE],
        started_at=now,
        broker_connected=True,
    )
    WorkerHeartbeat.objects.filter(hostname__startswith="write-2718281").update(seen_at=now - timedelta(minutes=2))
    services.heartbeat_record(
        hostname="derived-3141592@ip-10-42-17-4.eu-west-1.compute.internal",
        pid=3141592,
        queues=[settings.MEMORY_DERIVED_QUEUE],
        started_at=now,
        broker_connected=False,
    )
    size = browser.get_window_size()
    browser.set_window_size(width, 900)
    try:
        log_in(browser, live_server, SUPERUSER, PASSWORD)
        with redis_unreachable():
            open_page(browser, live_server)
            assert browser.find_element(By.CSS_SELECTOR, '[data-engine="cache"]').get_attribute("data-ok") == "false"
            screenshot(browser, f"health-tables-{width}.png")

            assert browser.execute_script(BROKEN_WORDS) == []
            assert set(browser.execute_script(TABLE_OVERFLOW)) == {0}
            assert browser.execute_script(SIDEWAYS) == 0
            lines = browser.find_elements(By.CSS_SELECTOR, ".memory-chart svg polyline.memory-chart__line")
            assert len(lines) >= 4
            assert all(len(line.get_attribute("points").split()) >= 2 for line in lines)
            boxes = browser.execute_script(
                "return [...document.querySelectorAll('.memory-chart svg')].map((svg) => svg.getBoundingClientRect().width);"
            )
            assert min(boxes) > 150  # drawn at a readable width, not squeezed
            lifts = browser.execute_script(LINE_ABOVE_AXIS)
            assert lifts
            assert min(lifts) >= 2  # a flat zero (the dead letters) is a line of its own, not the axis
    finally:
        browser.set_window_size(size["width"], size["height"])
