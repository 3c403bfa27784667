"""The project's middleware (memoryproject/middleware.py): one structured line per request with its id,
the same id on every line logged while it runs, and the admin's sessions, user and messages kept off
the API's requests."""

import logging
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversations import selectors
from memoryproject.middleware import client_ip

REQUESTS = "memoryproject.requests"
CONVERSATIONS = "/api/v1/conversations/"


@pytest.fixture
def request_lines(caplog: pytest.LogCaptureFixture) -> Any:
    """The structured lines logged at INFO and above, as the event dictionaries structlog rendered."""
    caplog.set_level(logging.INFO, logger=REQUESTS)
    caplog.set_level(logging.INFO, logger="conversations.services")

    def lines(event: str | None = None) -> list[dict[str, Any]]:
        found = [record.msg | {"level": record.levelname} for record in caplog.records if isinstance(record.msg, dict)]
        return [line for line in found if event is None or line["event"] == event]

    return lines


def test_an_api_request_logs_one_line_with_its_id_status_and_path(api, request_lines):
    response = api.get(CONVERSATIONS + "?limit=5", HTTP_USER_AGENT="agent/1.0")

    assert response.status_code == 200
    [line] = request_lines("request_finished")
    assert line["level"] == "INFO"
    assert line["code"] == 200
    assert line["request"] == "GET /api/v1/conversations/?limit=5"
    assert line["user_agent"] == "agent/1.0"
    assert line["ip"] == "127.0.0.1"
    assert line["user_id"] is None
    assert len(line["request_id"]) == 36


def test_every_line_logged_during_a_request_carries_its_id_and_no_other_request_shares_it(api, request_lines):
    api.post("/api/v1/conversations/c1/messages/", {"role": "user", "content": "hi"}, format="json")
    api.post("/api/v1/conversations/c1/messages/", {"role": "user", "content": "again"}, format="json")

    appended = request_lines("messages_appended")
    finished = request_lines("request_finished")
    assert [line["request_id"] for line in appended] == [line["request_id"] for line in finished]
    assert len({line["request_id"] for line in finished}) == 2


def test_a_refused_request_is_logged_as_a_warning(db, request_lines):
    response = APIClient().get(CONVERSATIONS, HTTP_AUTHORIZATION="Api-Key nope.nope")

    assert response.status_code == 401
    [line] = request_lines("request_finished")
    assert line["level"] == "WARNING"
    assert line["code"] == 401


def test_an_unhandled_error_is_logged_once_with_its_traceback(api, request_lines, monkeypatch):
    def broken(**kwargs: Any) -> None:
        raise RuntimeError("the selector broke")

    monkeypatch.setattr(selectors, "conversation_list", broken)
    api.raise_request_exception = False

    assert api.get(CONVERSATIONS).status_code == 500
    assert request_lines("request_finished") == []
    [line] = request_lines("request_failed")
    assert line["level"] == "ERROR"
    assert line["code"] == 500
    assert "RuntimeError: the selector broke" in line["exception"]


def test_the_client_address_named_by_a_trusted_proxy_is_logged(api, request_lines, settings):
    settings.MEMORY_TRUSTED_PROXIES = ["127.0.0.1/32", "10.0.0.0/8"]
    api.get(CONVERSATIONS, HTTP_X_FORWARDED_FOR="203.0.113.7, 10.0.0.1")
    api.get(CONVERSATIONS, REMOTE_ADDR="198.51.100.4")

    assert [line["ip"] for line in request_lines("request_finished")] == ["203.0.113.7", "198.51.100.4"]


@pytest.mark.parametrize(
    ("remote", "forwarded", "client"),
    [
        ("198.51.100.4", "203.0.113.7", "198.51.100.4"),  # not from a trusted proxy: the header is ignored
        ("10.0.0.2", "203.0.113.7", "203.0.113.7"),
        ("10.0.0.2", "6.6.6.6, 203.0.113.7", "203.0.113.7"),  # what the client wrote to the left is ignored
        ("10.0.0.2", "6.6.6.6, 203.0.113.7, 10.0.0.9", "203.0.113.7"),  # through two proxies
        ("10.0.0.2", "10.0.0.7, 10.0.0.9", "10.0.0.7"),  # every hop trusted: the farthest one
        ("10.0.0.2", "203.0.113.7, unknown", "10.0.0.2"),  # a proxy that writes no address
        ("10.0.0.2", "", "10.0.0.2"),
        ("::ffff:10.0.0.2", "2001:db8::7", "2001:db8::7"),
    ],
)
def test_x_forwarded_for_is_believed_only_from_a_trusted_proxy_and_read_from_the_right(remote, forwarded, client, settings, rf):
    settings.MEMORY_TRUSTED_PROXIES = ["10.0.0.0/8"]
    request = rf.get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)

    assert client_ip(request) == client


def test_no_line_is_built_below_the_loggers_level(api, caplog):
    caplog.set_level(logging.WARNING, logger=REQUESTS)

    api.get(CONVERSATIONS)

    assert [record for record in caplog.records if record.name == REQUESTS] == []


def test_an_api_request_has_no_session_user_or_messages(api):
    response = api.get(CONVERSATIONS)

    request = response.wsgi_request
    assert not hasattr(request, "session")
    assert not hasattr(request, "_messages")
    assert "Cookie" not in response.get("Vary", "")
    assert response.cookies == {}


def test_the_admin_still_has_its_session_user_and_messages(operator_client, operator, request_lines):
    response = operator_client.get("/admin/")

    assert response.status_code == 200
    request = response.wsgi_request
    assert request.user == operator
    assert request.session.session_key
    assert hasattr(request, "_messages")
    [line] = request_lines("request_finished")
    assert line["user_id"] == operator.pk


def test_a_request_line_shows_counts_and_flags_but_never_what_a_user_searched_for(api, request_lines):
    """A search's text, a subject or a date in the query string is someone's content: after an erase, the
    logs must not still hold it. Counts, flags and choices stay, for the operators."""
    api.get("/api/v1/users/u-42/search/?q=my+diagnosis+is+private&top_k=5&role=user&role=assistant&start_date=2024-01-01")
    api.get("/api/v1/users/u-42/memories/?query=where+does+she+live&subject=Caroline&include_past=true")

    search, memories = (line["request"] for line in request_lines("request_finished"))
    assert search == "GET /api/v1/users/u-42/search/?q=...&top_k=5&role=user&role=assistant&start_date=..."
    assert memories == "GET /api/v1/users/u-42/memories/?query=...&subject=...&include_past=true"


def test_an_operator_who_asks_for_content_in_the_logs_gets_the_whole_request_line(api, request_lines, settings):
    settings.MEMORY_LOG_CONTENT = True

    api.get("/api/v1/users/u-42/search/?q=bars+near+Sol&top_k=5")

    [line] = request_lines("request_finished")
    assert line["request"] == "GET /api/v1/users/u-42/search/?q=bars+near+Sol&top_k=5"
