"""The scripted OpenAI-compatible model server (``benchmarks.model_server``), driven by a real
``langchain_openai.ChatOpenAI`` as the service's workers drive a tenant's model: answers and their
usage, scripts set in the process and through the control endpoint, errors and timeouts as the
openai client raises them, streaming, and the command."""

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from benchmarks.model_server import DEFAULT_ANSWER, ModelServer, ScriptedResponder, script_set, usage_of
from conversations import tokens

ROOT = Path(__file__).resolve().parents[2]
PROMPT = [SystemMessage("You keep the memories of one user."), HumanMessage('{"user_id": "u1", "memories": [], "messages": []}')]
SENT = [{"role": "system", "content": PROMPT[0].content}, {"role": "user", "content": PROMPT[1].content}]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def model(server: ModelServer, name: str = "scripted", **options: object) -> ChatOpenAI:
    return ChatOpenAI(base_url=server.url, api_key="x", model=name, max_retries=0, **options)


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - the test's own server
        return json.load(answer)


def test_an_unscripted_model_answers_no_operations_with_its_usage(server):
    reply = model(server).invoke(PROMPT)

    assert reply.content == DEFAULT_ANSWER
    expected = usage_of(SENT, DEFAULT_ANSWER)
    assert reply.usage_metadata["input_tokens"] == expected["prompt_tokens"]
    assert reply.usage_metadata["output_tokens"] == tokens.count(DEFAULT_ANSWER) == expected["completion_tokens"]
    assert reply.usage_metadata["total_tokens"] == expected["total_tokens"]
    assert expected["prompt_tokens"] > tokens.count(SENT[0]["content"]) + tokens.count(SENT[1]["content"])
    (request,) = server.requests
    assert request["model"] == "scripted"
    assert request["messages"] == SENT
    served = server.served()["scripted"]
    assert (served.calls, served.errors, served.prompt_tokens) == (1, 0, expected["prompt_tokens"])


def test_scripted_steps_answer_in_order_then_the_fallback_answers():
    fallback = ScriptedResponder(fallback=lambda messages, name: f"{name} heard {len(messages)} messages")
    with ModelServer(fallback) as server:
        fallback.script("scripted", [{"answer": "first"}, {"answer": {"operations": [{"op": "none"}]}, "times": 2}])
        answers = [model(server).invoke(PROMPT).content for _ in range(4)]

    assert answers == [
        "first",
        '{"operations": [{"op": "none"}]}',
        '{"operations": [{"op": "none"}]}',
        "scripted heard 2 messages",
    ]


def test_a_failing_step_raises_the_clients_error_for_its_status_then_the_model_answers(server):
    server.responder.script(
        "scripted",
        [{"status": 500, "times": 2, "message": "overloaded"}, {"status": 429}, {"status": 400}, {"answer": "recovered"}],
    )
    client = model(server)

    for _ in range(2):
        with pytest.raises(openai.InternalServerError, match="overloaded"):
            client.invoke(PROMPT)
    with pytest.raises(openai.RateLimitError):
        client.invoke(PROMPT)
    with pytest.raises(openai.BadRequestError):
        client.invoke(PROMPT)
    assert client.invoke(PROMPT).content == "recovered"
    served = server.served()["scripted"]
    assert (served.calls, served.errors) == (5, 4)


def test_each_model_follows_its_own_script(server):
    server.responder.script("extractor", [{"answer": "for the extractor"}])

    assert model(server, "other").invoke(PROMPT).content == DEFAULT_ANSWER
    assert model(server, "extractor").invoke(PROMPT).content == "for the extractor"
    assert model(server, "extractor").invoke(PROMPT).content == DEFAULT_ANSWER
    assert [request["model"] for request in server.requests] == ["other", "extractor", "extractor"]


def test_sleeping_beyond_the_clients_timeout_raises_a_timeout(server):
    server.responder.script("scripted", [{"sleep": 30}, {"answer": "on time"}])
    client = model(server, timeout=0.5)

    with pytest.raises(openai.APITimeoutError):
        client.invoke(PROMPT)
    assert client.invoke(PROMPT).content == "on time"


def test_hostile_answers_reach_the_client_unchanged(server):
    many = {
        "operations": [
            {"op": "add", "kind": "fact", "subject": "user", "text": f"fact {n}", "sources": []} for n in range(10_000)
        ]
    }
    foreign = {"operations": [{"op": "update", "memory_id": "00000000-0000-4000-8000-000000000001", "text": "x", "sources": []}]}
    server.responder.script(
        "scripted", [{"answer": many}, {"answer": foreign}, {"answer": "nul\x00inside"}, {"answer": "not json {"}]
    )
    client = model(server)

    assert len(json.loads(client.invoke(PROMPT).content)["operations"]) == 10_000
    assert json.loads(client.invoke(PROMPT).content) == foreign
    assert client.invoke(PROMPT).content == "nul\x00inside"
    assert client.invoke(PROMPT).content == "not json {"


def test_another_process_sets_the_script_through_the_control_endpoint(server):
    control = server.url.removesuffix("/v1")
    script_set(server.url, model="scripted", steps=[{"answer": "from afar", "times": 2}, {"status": 503, "message": "down"}])

    assert get(f"{control}/script") == {
        "models": {"scripted": [{"times": 2, "answer": "from afar"}, {"times": 1, "status": 503, "message": "down"}]}
    }
    assert model(server).invoke(PROMPT).content == "from afar"
    assert get(f"{control}/script")["models"]["scripted"][0] == {"times": 1, "answer": "from afar"}
    assert [body["messages"] for body in get(f"{control}/requests?model=scripted")["requests"]] == [SENT]
    assert get(f"{control}/requests?model=other") == {"requests": []}


def test_a_script_that_does_not_read_is_refused_and_the_queue_is_kept(server):
    script_set(server.url, model="scripted", steps=[{"answer": "kept"}])

    for steps in (
        [{"status": 200}],
        [{"answer": "a", "status": 500}],
        [{"sleep": -1}],
        [{"times": 0}],
        [{"reply": "x"}],
        ["text"],
    ):
        with pytest.raises(ValueError, match="refused the script"):
            script_set(server.url, model="scripted", steps=steps)
    assert model(server).invoke(PROMPT).content == "kept"


def test_a_streamed_answer_comes_in_chunks_with_its_usage(server):
    server.responder.script("scripted", [{"answer": '{"operations": []}'}])

    chunks = list(model(server, stream_usage=True).stream(PROMPT))

    assert "".join(chunk.content for chunk in chunks) == '{"operations": []}'
    usage = [chunk.usage_metadata for chunk in chunks if chunk.usage_metadata]
    assert usage[-1]["input_tokens"] == usage_of(SENT, DEFAULT_ANSWER)["prompt_tokens"]
    assert usage[-1]["output_tokens"] == tokens.count('{"operations": []}')


def test_the_models_endpoint_lists_the_scripted_models(server):
    server.responder.script("extractor", [{"answer": "x"}])

    listed = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0).models.list()

    assert sorted(entry.id for entry in listed.data) == ["extractor", "scripted"]


def test_the_command_serves_until_stopped_and_prints_its_url():
    command = [sys.executable, "-m", "benchmarks.model_server", "--port", "0"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = process.stdout.readline()
        url = line.split()[1]
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/v1")
        assert [entry["id"] for entry in get(f"{url}/models")["data"]] == ["scripted"]
        reply = ChatOpenAI(base_url=url, api_key="x", model="scripted", max_retries=0).invoke(PROMPT)
        assert reply.content == DEFAULT_ANSWER
    finally:
        process.terminate()
        process.wait(timeout=10)
