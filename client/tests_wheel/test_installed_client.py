"""The installed wheel against a running service, in an environment holding only the wheel, its
dependencies and pytest: ``MEMORY_SERVICE_URL`` and ``MEMORY_API_KEY`` name the service and a key
of a tenant, ``MEMORY_CLIENT_VERSION`` the version built. Not part of the distribution."""

import asyncio
import importlib
import importlib.resources
import os
import sys
import sysconfig
import time
import uuid

import pytest

import memory_client
from memory_client import BadRequest, MemoryClient, MemoryServiceError, NotFound

URL = os.environ["MEMORY_SERVICE_URL"]
KEY = os.environ["MEMORY_API_KEY"]


@pytest.fixture
def client():
    with MemoryClient(URL, KEY) as memory:
        yield memory


def test_the_package_is_the_installed_wheel_complete_typed_and_without_django():
    assert memory_client.__file__.startswith(sysconfig.get_paths()["purelib"])
    assert memory_client.__version__ == os.environ["MEMORY_CLIENT_VERSION"]
    files = {entry.name for entry in importlib.resources.files("memory_client").iterdir()}
    assert {"__init__.py", "http.py", "messages.py", "langchain.py", "langgraph.py", "py.typed"} <= files
    for module in ("memory_client.messages", "memory_client.langchain", "memory_client.langgraph"):
        with pytest.raises(ModuleNotFoundError) as missing:  # present, needing only the extras' libraries
            importlib.import_module(module)
        assert missing.value.name.split(".")[0] in ("langchain_core", "langgraph", "memory_wire")
    assert not [name for name in sys.modules if name.split(".")[0] in ("django", "rest_framework")]


def test_append_window_facts_and_an_error_code(client):
    conversation = f"wheel-{uuid.uuid4().hex[:8]}"
    stored = client.append(conversation, [{"role": "user", "content": "Rex is my puppy."}], user_id="wheel-user")
    assert stored[0]["seq"] > 0
    assert [m["content"] for m in client.window(conversation, format="openai")] == ["Rex is my puppy."]
    assert client.set_fact("wheel-user", "pet", "Rex")["value"] == "Rex"
    assert client.get_fact("wheel-user", "pet")["value"] == "Rex"
    with pytest.raises(BadRequest) as raised:
        client.append(conversation, [{"role": "robot", "content": "beep"}])
    assert raised.value.code == "validation_error"
    with pytest.raises(NotFound):
        client.update_conversation("wheel-never-made", archived=True)
    with pytest.raises(ValueError, match="conversation id"):
        client.window("not/valid")


def test_search_finds_what_was_appended(client):
    conversation = f"wheel-search-{uuid.uuid4().hex[:8]}"
    client.append(conversation, [{"role": "user", "content": "The zeppelin lands in Friedrichshafen."}])
    deadline = time.monotonic() + 30
    while (client.get_conversation(conversation) or {}).get("message_count", 0) < 1:  # persisted by the worker
        assert time.monotonic() < deadline, "the message was not persisted"
        time.sleep(0.2)
    hits = client.search(conversation, "zeppelin Friedrichshafen", mode="keyword")["results"]
    assert hits[0]["content"] == "The zeppelin lands in Friedrichshafen."


def test_the_async_client(client):
    async def run():
        conversation = f"wheel-async-{uuid.uuid4().hex[:8]}"
        await client.aappend_message(conversation, "user", "hello")
        listed = await client.amessages(conversation)
        status = await client.astatus()
        try:
            await client.aget_fact("wheel-user", "a/b")
        except ValueError:
            refused = True
        await client.aclose()
        return listed, status, refused

    listed, status, refused = asyncio.run(run())
    assert [m["content"] for m in listed] == ["hello"]
    assert status["database"]["ok"] is True
    assert refused
    assert issubclass(NotFound, MemoryServiceError)
