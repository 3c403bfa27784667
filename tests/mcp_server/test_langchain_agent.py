"""The MCP tools loaded by langchain-mcp-adapters into a LangChain agent: the agent's (fake) model
calls a tool, and the call is carried out by the live service for the key's tenant."""

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient

from conversations.models import Message
from facts.models import UserFact
from tests.client.conftest import LiveService
from tests.mcp_server.conftest import mcp_url


class ToolCallingFakeModel(GenericFakeChatModel):
    """Answers its scripted messages in turn, whatever tools it is given (a paid model's stand-in)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ToolCallingFakeModel":
        return self


def memory_tools_client(service: LiveService) -> MultiServerMCPClient:
    return MultiServerMCPClient(
        {
            "memory": {
                "transport": "streamable_http",
                "url": mcp_url(service),
                "headers": {"Authorization": f"Api-Key {service.api_key}"},
            }
        }
    )


def test_an_agent_sets_a_fact_through_the_mcp_tools(service: LiveService, tenant: Any) -> None:
    model = ToolCallingFakeModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[{"name": "set_fact", "args": {"user_id": "ada", "key": "city", "value": "Lyon"}, "id": "call-1"}],
                ),
                AIMessage(content="Noted: you live in Lyon."),
            ]
        )
    )

    async def run() -> dict[str, Any]:
        tools = await memory_tools_client(service).get_tools()
        assert {"append_messages", "get_context", "search_memory", "set_fact"} <= {tool.name for tool in tools}
        agent = create_agent(model, tools)
        return await agent.ainvoke({"messages": [{"role": "user", "content": "I moved to Lyon."}]})

    result = asyncio.run(run())
    (tool_message,) = [message for message in result["messages"] if isinstance(message, ToolMessage)]
    assert tool_message.status == "success"
    assert '"created": ["city"]' in tool_message.text
    assert result["messages"][-1].text == "Noted: you live in Lyon."
    fact = UserFact.objects.for_tenant(tenant).get(user_id="ada")
    assert (fact.key, fact.value) == ("city", "Lyon")


def test_a_refused_tool_call_reaches_the_agent_with_the_services_error_code(service: LiveService, tenant: Any) -> None:
    bad_turn = {"conversation_id": "agent", "messages": [{"role": "robot", "content": "beep"}]}
    model = ToolCallingFakeModel(
        messages=iter(
            [
                AIMessage(content="", tool_calls=[{"name": "append_messages", "args": bad_turn, "id": "call-1"}]),
                AIMessage(content="I could not save that."),
            ]
        )
    )

    async def run() -> dict[str, Any]:
        agent = create_agent(model, await memory_tools_client(service).get_tools())
        return await agent.ainvoke({"messages": [{"role": "user", "content": "Save this."}]})

    result = asyncio.run(run())
    (tool_message,) = [message for message in result["messages"] if isinstance(message, ToolMessage)]
    assert tool_message.status == "error"
    assert '"code": "validation_error"' in tool_message.text
    assert result["messages"][-1].text == "I could not save that."
    assert not Message.objects.for_tenant(tenant).exists()
