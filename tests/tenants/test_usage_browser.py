"""A tenant's usage on its admin page, in a real browser: headless Chromium driven by Selenium against
the live server, with the fixtures of ``tests/conversations/test_admin_browser.py``.

The operator sees the table of the last 30 days and a bar chart of each figure per day drawn (SVG
bars with a height; storage's caption is the latest day's level, not a sum), and
the page fits a 1280 and a 1440 pixel wide window without scrolling sideways. Screenshots go to
``$SCREENSHOT_DIR`` (default ``var/screenshots`` under the repository root).
"""

from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec

from conversations.models import Conversation, Message
from tenants import usage
from tenants.models import Tenant
from tests.conversations.test_admin_browser import (  # noqa: F401 - the headless Chromium fixtures
    browser,
    driver,
    log_in,
    operator,
    screenshot,
    wait,
)
from tests.factories import conversation_with_messages

TENANTS = "/admin/tenants/tenant/"

# How far the page is wider than the window (0: it fits), as test_admin_browser.py measures it.
PAGE_OVERFLOW = """
const page = document.documentElement;
return Math.max(0, page.scrollWidth - page.clientWidth, page.scrollWidth - window.innerWidth);
"""


@pytest.fixture
def used(transactional_db: Any, tenant: Tenant, other_tenant: Tenant) -> None:
    """A fortnight of acme's usage: messages stored on several days, searches and chat runs today
    with tokens in the millions (the widest figures), and a busier globex."""
    Tenant.objects.filter(pk=tenant.pk).update(created_at=datetime.now(UTC) - timedelta(days=14))
    tenant.refresh_from_db()
    for days_ago in (1, 3, 6, 10):
        day = datetime.combine(usage.today() - timedelta(days=days_ago), time(12), tzinfo=UTC)
        conversation = conversation_with_messages(tenant, f"day-{days_ago}", 2 * days_ago)
        Message.objects.for_tenant(tenant).filter(conversation=conversation).update(persisted_at=day, created_at=day)
        Conversation.objects.for_tenant(tenant).filter(pk=conversation.pk).update(created_at=day)
    conversation_with_messages(tenant, "today", 5)
    usage.usage_record(tenant=tenant, searches=1234, chat_runs=56, model_tokens=12_345_678)
    usage.usage_record(tenant=other_tenant, searches=999_999)


@pytest.fixture(params=[(1280, 900), (1440, 900)], ids=["1280px", "1440px"])
def width(request: Any, driver: WebDriver) -> Iterator[int]:  # noqa: F811 - the imported fixture
    size = driver.get_window_size()
    driver.set_window_size(*request.param)
    yield request.param[0]
    driver.set_window_size(size["width"], size["height"])


def test_the_operator_sees_the_tenants_usage_table_and_bar_charts_without_scrolling_sideways(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    width: int,
    operator: Any,  # noqa: F811 - the imported fixture
    tenant: Tenant,
    used: None,
) -> None:
    log_in(browser, live_server)

    browser.get(f"{live_server.url}{TENANTS}{tenant.pk}/change/")

    table = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".memory-usage__table")))
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 30
    assert rows[0].text.startswith(f"{usage.today().isoformat()} (so far)")
    assert "12,345,678" in rows[0].text
    assert "1,234" in rows[0].text
    assert "999,999" not in browser.page_source  # globex's usage is not acme's
    charts = browser.find_elements(By.CSS_SELECTOR, ".memory-usage figure.memory-chart--bars")
    assert [chart.find_element(By.CSS_SELECTOR, ".memory-chart__label").text for chart in charts] == [
        "Messages",
        "Searches",
        "Chat runs",
        "Model tokens",
        "Storage",
    ]
    for chart in charts:
        svg = chart.find_element(By.TAG_NAME, "svg")
        assert svg.size["width"] > 100
        assert svg.size["height"] > 20
        assert len(chart.find_elements(By.CSS_SELECTOR, "svg rect.memory-chart__bar")) == 30
    messages_bars = browser.execute_script(
        "return [...arguments[0].querySelectorAll('rect')].filter((bar) => bar.getBoundingClientRect().height > 0).length;",
        charts[0],
    )
    assert messages_bars == 5  # the four earlier days with messages, and today
    # Storage in one unit, the table's and the chart's alike: today's level reads the same in both.
    storage = [row.find_elements(By.TAG_NAME, "td")[-1].text for row in rows]
    assert len({cell.split()[-1] for cell in storage}) == 1
    assert {cell.split()[-1] for cell in storage} <= {"B", "kB", "MB", "GB", "TB"}
    assert charts[-1].find_element(By.CSS_SELECTOR, ".memory-chart__value").text == storage[0]
    assert browser.execute_script(PAGE_OVERFLOW) == 0
    table_box = browser.execute_script("const box = arguments[0].getBoundingClientRect(); return box.right;", table)
    assert table_box <= width
    screenshot(browser, f"tenant-usage-{width}.png")
