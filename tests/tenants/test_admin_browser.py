"""The tenants' admin in a real browser: headless Chromium driven by Selenium against the live server,
set up as the conversations admin's browser tests are (``tests/conversations/test_admin_browser.py``).

A superuser's "Add tenant" button shows its "+" clear of its words, and a login locked after repeated
failures answers with a page that carries the site's own header and says how long the lock lasts in
words. Screenshots go to ``$SCREENSHOT_DIR`` (default ``var/screenshots`` under the repository root).
"""

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec

from tests.conversations.test_admin_browser import (  # noqa: F401 - the headless Chromium fixtures
    PASSWORD,
    SUPERUSER,
    browser,
    driver,
    log_in,
    screenshot,
    superuser,
    wait,
    window,
)

TENANTS = "/admin/tenants/tenant/"

# The box of a link's text (a range over its words), and the box of its background icon: the stock
# admin places it by background-position (from the right edge) at its natural size.
ICON_AND_TEXT = """
const link = arguments[0];
const done = arguments[arguments.length - 1];
const range = document.createRange();
range.selectNodeContents(link);
const text = range.getBoundingClientRect();
const box = link.getBoundingClientRect();
const style = getComputedStyle(link);
const url = style.backgroundImage.match(/url\\("?(.*?)"?\\)/)[1];
const offset = style.backgroundPositionX.match(/right\\s+([\\d.]+)px|calc\\(100% - ([\\d.]+)px\\)/);
const right = box.right - parseFloat(offset[1] || offset[2]);
const image = new Image();
image.onload = () => done({
    text: {left: text.left, right: text.right},
    icon: {left: right - image.naturalWidth, right: right},
    link: {left: box.left, right: box.right},
});
image.src = url;
"""


def test_the_add_buttons_plus_sits_clear_of_its_words(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    window: None,  # noqa: F811 - the imported fixture
    superuser: Any,  # noqa: F811 - the imported fixture
) -> None:
    log_in(browser, live_server, SUPERUSER, PASSWORD)

    browser.get(live_server.url + TENANTS)

    button = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".object-tools a.addlink")))
    assert button.text.lower() == "add tenant"
    boxes = browser.execute_async_script(ICON_AND_TEXT, button)
    assert boxes["text"]["right"] + 4 <= boxes["icon"]["left"], boxes
    assert boxes["icon"]["right"] <= boxes["link"]["right"] - 6, boxes
    screenshot(browser, "tenant-list.png", full_page=False)


@pytest.fixture
def lockout(settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = 0.25  # hours


def test_a_locked_login_answers_with_the_sites_own_header_and_the_lock_in_minutes(
    browser: WebDriver,  # noqa: F811 - the imported fixture
    live_server: Any,
    superuser: Any,  # noqa: F811 - the imported fixture
    lockout: None,
) -> None:
    for _ in range(2):
        browser.get(live_server.url + "/admin/login/")
        wait(browser).until(ec.presence_of_element_located((By.ID, "id_username"))).send_keys(SUPERUSER)
        browser.find_element(By.ID, "id_password").send_keys("not the password")
        submit = browser.find_element(By.CSS_SELECTOR, "input[type=submit]")
        submit.click()
        # The answer has replaced the form: the next get must not cancel a login still on its way.
        wait(browser).until(ec.staleness_of(submit))

    page = wait(browser).until(ec.visibility_of_element_located((By.ID, "lockout")))

    assert browser.find_element(By.ID, "site-name").text == admin.site.site_header
    assert browser.title == f"Account locked | {admin.site.site_title}"
    assert "Too many failed logins" in page.text
    assert "after 2 failed attempts" in page.text
    assert "Try again in 15 minutes" in page.text
    assert "Django" not in browser.page_source
    assert "PT15M" not in browser.page_source
    assert not get_user_model().objects.filter(username=SUPERUSER, last_login__isnull=False).exists()
    screenshot(browser, "lockout.png", full_page=False)
