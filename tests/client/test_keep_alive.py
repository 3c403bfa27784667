"""gunicorn keeps an idle connection open for GUNICORN_KEEPALIVE seconds (gunicorn.conf.py, 75 by
default): longer than the idle timeout of a load balancer in front, which reuses its connections
until then. gunicorn's own default, 2 s, would close them under the balancer."""

import socket
import time
from typing import Any

import pytest
from gunicorn.app.wsgiapp import WSGIApplication

from tests.faults import ROOT

GUNICORNS_OWN_KEEPALIVE = 2


def loaded_config(monkeypatch: pytest.MonkeyPatch, *arguments: str) -> Any:
    """gunicorn's configuration as gunicorn itself loads it for this command line, from the root."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("sys.argv", ["gunicorn", *arguments, "memoryproject.wsgi"])
    return WSGIApplication("%(prog)s [OPTIONS] [APP_MODULE]", prog="gunicorn").cfg


@pytest.mark.parametrize("arguments", [("-c", "gunicorn.conf.py"), ()], ids=["the-procfile", "the-default-config-file"])
def test_gunicorn_keeps_idle_connections_75_seconds_by_default(monkeypatch: pytest.MonkeyPatch, arguments: tuple) -> None:
    monkeypatch.delenv("GUNICORN_KEEPALIVE", raising=False)

    assert loaded_config(monkeypatch, *arguments).keepalive == 75


def test_the_keep_alive_is_read_from_gunicorn_keepalive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUNICORN_KEEPALIVE", "620")

    assert loaded_config(monkeypatch, "-c", "gunicorn.conf.py").keepalive == 620


def test_the_command_line_still_overrides_the_keep_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUNICORN_KEEPALIVE", "620")

    assert loaded_config(monkeypatch, "-c", "gunicorn.conf.py", "--keep-alive", "5").keepalive == 5


def request_on(connection: socket.socket) -> bytes:
    """One keep-alive request of the API root on ``connection``; the answer's status line ("" when
    the server had closed the connection)."""
    connection.sendall(b"GET /api/v1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65_536)
        if not chunk:
            return b""
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += connection.recv(65_536)
    return head.split(b"\r\n")[0]


def test_a_connection_idle_longer_than_gunicorns_own_keep_alive_serves_the_next_request(web: Any) -> None:
    with socket.create_connection(("127.0.0.1", web.port), timeout=30) as connection:
        assert request_on(connection).startswith(b"HTTP/1.1 200")

        # Idle as a balancer's pooled connection is between two requests: past gunicorn's 2 s (its
        # worker looks for expired connections once a second).
        time.sleep(GUNICORNS_OWN_KEEPALIVE + 2)

        try:
            answered = request_on(connection)
        except ConnectionResetError:
            answered = b""
        assert answered.startswith(b"HTTP/1.1 200"), "gunicorn closed the idle connection"
