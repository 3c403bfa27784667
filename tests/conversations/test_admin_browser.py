"""The operators' admin in a real browser: headless Chromium driven by Selenium against the live server.

An operator of tenant acme logs in through the login form, searches conversations by the words of a
message, reads a transcript (every role, expandable metadata, the tool calls an assistant made, pages
of a long history), rebuilds a conversation's cache, cannot reach globex's conversations at all, and
enters a model provider's API key that no page shows again. Every change list fits a 1440 × 900
window without scrolling sideways. Screenshots of the lists and of the transcript go to
``$SCREENSHOT_DIR`` (default ``var/screenshots`` under the repository root).
"""

import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from conversations import cache, services
from conversations.models import Conversation, DeadLetter
from tenants import services as tenant_services
from tenants.models import TenantApiKey
from tests.factories import conversation_with_messages

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = Path(os.environ.get("SCREENSHOT_DIR") or REPO_ROOT / "var" / "screenshots")

USERNAME = "acme-operator"
PASSWORD = "correct horse battery staple"
SEARCH_WORDS = "quokka marmalade"  # in one acme conversation and in globex's, nowhere else
WAIT_SECONDS = 15

CHANGELIST = "/admin/conversations/conversation/"


# --- The browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.skip(f"browser tests need Debian's chromium and chromium-driver; missing: {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for argument in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1440,1000",
            f"--user-data-dir={profile}",
        ):
            options.add_argument(argument)
        browser = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
        try:
            yield browser
        finally:
            browser.quit()


@pytest.fixture
def browser(driver: WebDriver, live_server: Any) -> WebDriver:
    """The module's browser with no session left over from an earlier test."""
    driver.get(live_server.url + "/admin/login/")
    driver.delete_all_cookies()
    return driver


def wait(driver: WebDriver) -> WebDriverWait:
    return WebDriverWait(driver, WAIT_SECONDS)


def log_in(driver: WebDriver, live_server: Any, username: str = USERNAME, password: str = PASSWORD) -> None:
    driver.get(live_server.url + "/admin/login/")
    wait(driver).until(ec.presence_of_element_located((By.ID, "id_username"))).send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait(driver).until(ec.presence_of_element_located((By.ID, "user-tools")))


def search(driver: WebDriver, live_server: Any, words: str) -> None:
    driver.get(live_server.url + CHANGELIST)
    box = wait(driver).until(ec.presence_of_element_located((By.ID, "searchbar")))
    box.clear()
    box.send_keys(words, Keys.ENTER)
    wait(driver).until(lambda d: "q=" in d.current_url and d.find_elements(By.ID, "result_list"))


def result_ids(driver: WebDriver) -> list[str]:
    return [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody th.field-conversation")]


def screenshot(driver: WebDriver, name: str, *, full_page: bool = True) -> Path:
    """The page (the whole of it, or only the window), saved under SCREENSHOT_DIR."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOT_DIR / name
    if not full_page:
        assert driver.save_screenshot(str(target))
        return target
    size = driver.get_window_size()
    page_height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(size["width"], min(max(size["height"], page_height + 140), 6000))
    try:
        assert driver.save_screenshot(str(target))
    finally:
        driver.set_window_size(size["width"], size["height"])
    return target


# --- The data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tenants:
    needle: Conversation  # the one acme conversation whose messages hold SEARCH_WORDS
    acme_others: list[Conversation]
    globex: list[Conversation]


NEEDLE_ROWS = [
    ("system", "You are the support agent of the Acme shop. Be brief.", {}),
    ("user", "My quokka marmalade order never arrived.", {"channel": "web"}),
    ("assistant", "Sorry about that. Let me look the order up.", {}),
    ("tool", '{"order": "A-1001", "status": "lost in transit"}', {"tool_call_id": "call_order_7", "name": "order_lookup"}),
    ("assistant", "The parcel was lost in transit; a new one ships today.", {"model": "support-v2"}),
]


@pytest.fixture
def operator(transactional_db: Any, tenant: Any) -> Any:
    return tenant_services.operator_create(tenant=tenant, username=USERNAME, password=PASSWORD)


@pytest.fixture
def conversations(transactional_db: Any, tenant: Any, other_tenant: Any) -> Tenants:
    needle = conversation_with_messages(tenant, "support-7731", rows=NEEDLE_ROWS, user_id="customer-100", agent_id="support")
    acme_others = [conversation_with_messages(tenant, f"support-20{n:02d}", 4, user_id=f"customer-{n}") for n in range(3)]
    globex = [
        conversation_with_messages(
            other_tenant,
            f"globex-ticket-{n}",
            rows=[("user", f"Globex wants quokka marmalade too (ticket {n}).", {}), ("assistant", "Noted.", {})],
        )
        for n in (41, 42)
    ]
    return Tenants(needle=needle, acme_others=acme_others, globex=globex)


# --- The scenarios ----------------------------------------------------------------------------------


def test_an_operator_finds_the_one_conversation_whose_messages_hold_the_words_and_never_sees_globex(
    browser: WebDriver, live_server: Any, operator: Any, conversations: Tenants
) -> None:
    log_in(browser, live_server)

    search(browser, live_server, SEARCH_WORDS)

    assert result_ids(browser) == [conversations.needle.conversation_id]
    source = browser.page_source
    for other in conversations.globex:
        assert other.conversation_id not in source
    for other in conversations.acme_others:
        assert other.conversation_id not in source
    screenshot(browser, "conversation-list.png")


def test_an_operator_opens_the_conversation_and_reads_every_role_with_expandable_metadata(
    browser: WebDriver, live_server: Any, operator: Any, conversations: Tenants
) -> None:
    log_in(browser, live_server)
    search(browser, live_server, SEARCH_WORDS)

    browser.find_element(By.CSS_SELECTOR, "#result_list tbody th.field-conversation a").click()

    chat = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".memory-chat")))
    assert f"/{conversations.needle.pk}/change/" in browser.current_url
    shown = chat.find_elements(By.CSS_SELECTOR, ".memory-message")
    assert [message.get_attribute("data-role") for message in shown] == [role for role, _, _ in NEEDLE_ROWS]
    assert all(message.is_displayed() for message in shown)
    for role in ("user", "assistant", "system", "tool"):
        assert chat.find_elements(By.CSS_SELECTOR, f".memory-message.memory-message--{role}")
    assert "quokka marmalade" in chat.find_element(By.CSS_SELECTOR, ".memory-message--user .memory-message__body").text
    assert "A-1001" in chat.find_element(By.CSS_SELECTOR, ".memory-message--tool .memory-message__body").text

    tool = chat.find_element(By.CSS_SELECTOR, ".memory-message--tool")
    details = tool.find_element(By.CSS_SELECTOR, "details.memory-message__details")
    metadata = details.find_element(By.CSS_SELECTOR, "pre.memory-json")
    assert details.get_attribute("open") is None
    assert not metadata.is_displayed()
    details.find_element(By.TAG_NAME, "summary").click()
    wait(browser).until(ec.visibility_of(metadata))
    assert details.get_attribute("open") is not None
    assert '"tool_call_id": "call_order_7"' in metadata.text
    assert '"name": "order_lookup"' in metadata.text
    screenshot(browser, "conversation-transcript.png")


def test_a_ten_thousand_message_conversation_opens_on_its_newest_page_and_page_one_shows_seq_one(
    browser: WebDriver, live_server: Any, operator: Any, tenant: Any
) -> None:
    rows = [("user" if seq % 2 else "assistant", f"message {seq} of a long conversation", {}) for seq in range(1, 10_001)]
    long = conversation_with_messages(tenant, "long-10000", rows=rows)
    log_in(browser, live_server)

    browser.get(f"{live_server.url}{CHANGELIST}{long.pk}/change/")

    wait(browser).until(ec.presence_of_element_located((By.ID, "seq-10000")))
    seqs = [int(m.get_attribute("id").removeprefix("seq-")) for m in browser.find_elements(By.CSS_SELECTOR, ".memory-message")]
    assert seqs == list(range(9_901, 10_001))
    pages = browser.find_element(By.CSS_SELECTOR, ".memory-pages")
    assert pages.is_displayed()
    assert pages.find_element(By.CSS_SELECTOR, ".is-current").text == "100"
    screenshot(browser, "conversation-transcript-long.png", full_page=False)

    pages.find_element(By.CSS_SELECTOR, 'a[href="?page=1#transcript"]').click()

    first = wait(browser).until(ec.presence_of_element_located((By.ID, "seq-1")))
    assert "message 1 of a long conversation" in first.text
    seqs = [int(m.get_attribute("id").removeprefix("seq-")) for m in browser.find_elements(By.CSS_SELECTOR, ".memory-message")]
    assert seqs == list(range(1, 101))
    assert browser.find_element(By.CSS_SELECTOR, ".memory-pages .is-current").text == "1"


def test_an_operator_rebuilds_the_cache_and_the_redis_list_exists_afterwards(
    browser: WebDriver, live_server: Any, operator: Any, conversations: Tenants
) -> None:
    needle = conversations.needle
    pair = ("acme", needle.conversation_id)
    assert not cache.states(conversations=[pair])[pair].cached
    log_in(browser, live_server)
    browser.get(f"{live_server.url}{CHANGELIST}{needle.pk}/change/")
    button = wait(browser).until(ec.element_to_be_clickable((By.ID, "rebuild-cache")))

    button.click()

    wait(browser).until(ec.staleness_of(button))
    success = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert "Rebuilt the cache of 1 conversation (5 messages cached)" in success.text
    assert not browser.find_elements(By.CSS_SELECTOR, ".messagelist .error, .messagelist .warning")
    assert f"/{needle.pk}/change/" in browser.current_url
    state = cache.states(conversations=[pair])[pair]
    assert state.cached
    assert state.length == len(NEEDLE_ROWS)
    assert "cached" in browser.find_element(By.ID, "cache-state").text
    screenshot(browser, "conversation-rebuilt.png")


def test_an_operator_who_types_the_url_of_a_globex_conversation_gets_a_404(
    browser: WebDriver, live_server: Any, operator: Any, conversations: Tenants
) -> None:
    foreign = conversations.globex[0]
    log_in(browser, live_server)

    browser.get(f"{live_server.url}{CHANGELIST}{foreign.pk}/change/")

    heading = wait(browser).until(ec.presence_of_element_located((By.TAG_NAME, "h1")))
    assert "Not Found" in browser.title or "404" in browser.title
    assert "Not Found" in heading.text or "404" in heading.text
    source = browser.page_source
    for other in conversations.globex:
        assert other.conversation_id not in source
    assert "globex" not in source.lower()


def test_an_operator_enters_a_provider_key_that_the_admin_never_shows_again(
    browser: WebDriver, live_server: Any, operator: Any, tenant: Any
) -> None:
    secret = "sk-operator-typed-secret-7c1d"
    log_in(browser, live_server)
    browser.get(f"{live_server.url}/admin/tenants/providercredential/add/")
    provider = wait(browser).until(ec.presence_of_element_located((By.ID, "id_provider")))
    if browser.find_elements(By.ID, "id_tenant"):  # an operator may only pick their own tenant
        Select(browser.find_element(By.ID, "id_tenant")).select_by_visible_text(tenant.slug)
    provider.send_keys("openai")
    field = browser.find_element(By.ID, "id_secret")
    assert field.get_attribute("type") == "password"
    field.send_keys(secret)

    browser.find_element(By.NAME, "_continue").click()

    wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert browser.find_element(By.ID, "id_secret").get_attribute("value") == ""
    assert secret not in browser.page_source
    assert "…7c1d" in browser.page_source
    stored = tenant_services.provider_credential_secret(tenant=tenant, provider="openai")
    assert stored == secret
    browser.get(f"{live_server.url}/admin/tenants/providercredential/")
    rows = wait(browser).until(ec.presence_of_all_elements_located((By.CSS_SELECTOR, "#result_list tbody tr")))
    assert [row.find_element(By.CSS_SELECTOR, ".field-hint").text for row in rows] == ["…7c1d"]
    assert secret not in browser.page_source
    screenshot(browser, "provider-credentials.png", full_page=False)


# --- Tool calls in the transcript -------------------------------------------------------------------

TOOL_ROWS = [
    ("user", "Where is my order A-1001?", {}),
    (  # OpenAI's shape: the arguments a JSON string
        "assistant",
        "",
        {
            "tool_calls": [
                {
                    "id": "call_order_7",
                    "type": "function",
                    "function": {"name": "order_lookup", "arguments": '{"order": "A-1001"}'},
                }
            ]
        },
    ),
    ("tool", '{"order": "A-1001", "status": "lost in transit"}', {"tool_call_id": "call_order_7", "name": "order_lookup"}),
    (  # LangChain's shape: the arguments an object
        "assistant",
        "",
        {"tool_calls": [{"id": "call_ship_8", "name": "reship_order", "args": {"order": "A-1001", "express": True}}]},
    ),
    ("assistant", "A new parcel ships today by express.", {}),
]


def test_an_assistant_message_that_only_calls_tools_shows_each_calls_name_and_arguments_in_the_transcript(
    browser: WebDriver, live_server: Any, operator: Any, tenant: Any
) -> None:
    conversation = conversation_with_messages(tenant, "support-tools", rows=TOOL_ROWS)
    log_in(browser, live_server)

    browser.get(f"{live_server.url}{CHANGELIST}{conversation.pk}/change/")

    chat = wait(browser).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".memory-chat")))
    calling = [chat.find_element(By.ID, "seq-2"), chat.find_element(By.ID, "seq-4")]
    shown = [
        [
            (
                call.find_element(By.CSS_SELECTOR, ".memory-tool-call__name").text,
                json.loads(call.find_element(By.CSS_SELECTOR, ".memory-tool-call__arguments").text),
            )
            for call in message.find_elements(By.CSS_SELECTOR, ".memory-tool-call")
        ]
        for message in calling
    ]
    assert shown == [[("order_lookup", {"order": "A-1001"})], [("reship_order", {"order": "A-1001", "express": True})]]
    for message in calling:
        assert message.find_element(By.CSS_SELECTOR, ".memory-tool-call__arguments").is_displayed()
        assert not message.find_elements(By.CSS_SELECTOR, ".memory-message__body")  # no empty bubble
    assert "call_order_7" in calling[0].text
    assert chat.find_element(By.ID, "seq-5").find_element(By.CSS_SELECTOR, ".memory-message__body").text == (
        "A new parcel ships today by express."
    )
    assert not chat.find_element(By.ID, "seq-5").find_elements(By.CSS_SELECTOR, ".memory-tool-calls")
    screenshot(browser, "conversation-transcript-tool-calls.png")


# --- Every change list fits the window ----------------------------------------------------------------

SUPERUSER = "root-operator"
WINDOW = (1440, 900)
LONG_ERROR = (
    'OperationalError: connection to server at "10.0.3.17", port 5432 failed: FATAL: remaining connection '
    "slots are reserved for non-replication superuser connections"
)


@pytest.fixture
def window(driver: WebDriver) -> Iterator[None]:
    """The browser at 1440 × 900, an operator's laptop."""
    size = driver.get_window_size()
    driver.set_window_size(*WINDOW)
    yield
    driver.set_window_size(size["width"], size["height"])


@pytest.fixture
def superuser(transactional_db: Any) -> Any:
    return get_user_model().objects.create_superuser(SUPERUSER, "root@example.com", PASSWORD)


@pytest.fixture
def busy(transactional_db: Any, tenant: Any, other_tenant: Any) -> None:
    """Rows with the long values production has: uuid ids, cached conversations, dead letters with
    an error and a replay, API keys used, expiring and revoked, a provider credential."""
    for owner in (tenant, other_tenant):
        for _ in range(2):
            conversation_id = str(uuid.uuid4())
            conversation_with_messages(
                owner, conversation_id, 4, user_id=f"customer-{uuid.uuid4()}", agent_id="support-agent-eu-west-1"
            )
            services.cache_rebuild(tenant=owner, conversation_id=conversation_id, allow_empty=True)
            DeadLetter.unscoped.create(
                tenant=owner,
                task_name="conversations.tasks.messages_persist_many",
                payload={"conversation_id": conversation_id},
                error=LONG_ERROR,
                attempts=5,
                replayed_at=timezone.now(),
            )
        DeadLetter.unscoped.create(
            tenant=owner,
            task_name="extraction.tasks.conversation_extract",
            payload={"conversation_id": str(uuid.uuid4())},
            error=LONG_ERROR * 3,
            attempts=12,
        )
        used, _ = tenant_services.api_key_create(
            tenant=owner, name="production ingestion worker", expiry_date=timezone.now() + timedelta(days=90)
        )
        TenantApiKey.objects.filter(pk=used.pk).update(last_used_at=timezone.now())
        revoked, _ = tenant_services.api_key_create(tenant=owner, name="staging")
        tenant_services.api_key_revoke(api_key=revoked)
        tenant_services.provider_credential_set(tenant=owner, provider="openai", secret="sk-test-0123456789abcdef")


def overflow(driver: WebDriver) -> dict[str, int]:
    """How far the page, and the results table's container, are wider than what they show (0: none)."""
    return driver.execute_script(
        """
        const page = document.documentElement;
        const results = document.querySelector("#changelist .results");
        return {
            page: Math.max(0, page.scrollWidth - page.clientWidth, page.scrollWidth - window.innerWidth),
            results: results ? Math.max(0, results.scrollWidth - results.clientWidth) : 0,
        };
        """
    )


def right_edges(driver: WebDriver, selector: str) -> list[float]:
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((e) => e.getBoundingClientRect().right);", selector
    )


def test_every_change_list_fits_a_1440_pixel_window_without_scrolling_sideways(
    browser: WebDriver, live_server: Any, window: None, superuser: Any, busy: None
) -> None:
    log_in(browser, live_server, SUPERUSER, PASSWORD)
    wider = {}

    for model in admin.site._registry:
        browser.get(live_server.url + reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))
        wait(browser).until(ec.presence_of_element_located((By.ID, "changelist")))
        if any(overflow(browser).values()):
            wider[model._meta.label] = overflow(browser)

    assert wider == {}


@pytest.mark.parametrize(
    ("url", "columns", "name"),
    [
        (CHANGELIST, ".field-cache_state_badge .memory-badge", "conversation-list-1440.png"),
        ("/admin/conversations/deadletter/", ".field-created time, .field-replayed time", "dead-letters-1440.png"),
        ("/admin/tenants/tenantapikey/", ".field-status .memory-badge, .field-last_used_time time", "api-keys-1440.png"),
    ],
)
def test_the_last_columns_of_the_lists_operators_read_most_are_on_screen_at_1440_pixels(
    browser: WebDriver, live_server: Any, window: None, superuser: Any, busy: None, url: str, columns: str, name: str
) -> None:
    log_in(browser, live_server, SUPERUSER, PASSWORD)

    browser.get(live_server.url + url)

    wait(browser).until(ec.presence_of_element_located((By.ID, "result_list")))
    edges = right_edges(browser, columns)
    visible = browser.execute_script("return document.querySelector('#changelist .results').getBoundingClientRect().right")
    assert edges
    assert max(edges) <= visible
    assert overflow(browser) == {"page": 0, "results": 0}
    screenshot(browser, name, full_page=False)


def test_a_long_conversation_id_in_the_list_shows_its_beginning_and_the_whole_id_on_hover(
    browser: WebDriver, live_server: Any, window: None, operator: Any, tenant: Any
) -> None:
    long_id = f"support-{uuid.uuid4()}"
    conversation_with_messages(tenant, long_id, 2)
    log_in(browser, live_server)

    browser.get(live_server.url + CHANGELIST)

    cell = wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#result_list tbody th.field-conversation")))
    assert cell.text == long_id[:19] + "…"
    assert cell.find_element(By.CSS_SELECTOR, "[title]").get_attribute("title") == long_id
    search(browser, live_server, long_id[:19])
    assert result_ids(browser) == [long_id[:19] + "…"]
