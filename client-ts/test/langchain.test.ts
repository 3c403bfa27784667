import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";

import { ServiceChatMessageHistory } from "../src/langchain.js";
import { client, freshId } from "./support.js";

describe("ServiceChatMessageHistory", () => {
  it("adds messages, reads them back equal, and clears them", async () => {
    const history = new ServiceChatMessageHistory(freshId("ts-history"), { client: client(), userId: "ana" });
    const turn = [
      new HumanMessage("What is the weather in Madrid?"),
      new AIMessage({ content: "", tool_calls: [{ id: "call-1", name: "weather", args: { city: "Madrid" }, type: "tool_call" }] }),
      new ToolMessage({ content: "Sunny, 31 °C", tool_call_id: "call-1", artifact: { celsius: 31 } }),
      new AIMessage({ content: "Sunny and hot: 31 °C.", name: "planner" }),
    ];

    await history.addMessages(turn);
    await history.addUserMessage("Thanks!");
    const messages = await history.getMessages();

    assert.deepEqual(messages.map((message) => message.getType()), ["human", "ai", "tool", "ai", "human"]);
    assert.equal(messages[0]!.content, "What is the weather in Madrid?");
    assert.deepEqual((messages[1] as AIMessage).tool_calls, [{ id: "call-1", name: "weather", args: { city: "Madrid" }, type: "tool_call" }]);
    assert.equal((messages[2] as ToolMessage).tool_call_id, "call-1");
    assert.deepEqual((messages[2] as ToolMessage).artifact, { celsius: 31 });
    assert.equal(messages[3]!.name, "planner");
    assert.equal(messages[4]!.content, "Thanks!");

    await history.clear();
    assert.deepEqual(await history.getMessages(), []);
  });

  it("reads the budgeted context with maxTokens, headed by the system prompt", async () => {
    const conversation = freshId("ts-budget");
    const history = new ServiceChatMessageHistory(conversation, { client: client(), maxTokens: 2000, systemPrompt: "You plan trips." });
    assert.deepEqual(await history.getMessages(), []); // an unknown conversation has no messages

    await history.addMessages([new HumanMessage("Find me bars near Sol."), new AIMessage("Salmon Guru and Ojalá.")]);
    const messages = await history.getMessages();

    assert.ok(messages[0] instanceof SystemMessage);
    assert.equal(messages[0].content, "You plan trips.");
    assert.deepEqual(messages.slice(1).map((message) => [message.getType(), message.content]), [
      ["human", "Find me bars near Sol."],
      ["ai", "Salmon Guru and Ojalá."],
    ]);
  });
});
