import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";

import { ServiceCheckpointSaver, ServiceStore } from "../src/langgraph.js";
import { client, freshId } from "./support.js";

/** A graph whose one node answers how many questions it has seen, and notes the last one in the store. */
function graph(user: string) {
  const answer = async (state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) => {
    const questions = state.messages.filter((message) => message.getType() === "human");
    await config.store?.put(["notes", user], "last", { question: String(questions.at(-1)?.content) });
    return { messages: [new AIMessage(`Question ${questions.length}.`)] };
  };
  return new StateGraph(MessagesAnnotation)
    .addNode("answer", answer)
    .addEdge(START, "answer")
    .addEdge("answer", END)
    .compile({ checkpointer: new ServiceCheckpointSaver({ client: client() }), store: new ServiceStore({ client: client() }) });
}

describe("a LangGraph.js graph", () => {
  it("keeps its state between runs, and another saver of the tenant resumes it", async () => {
    const thread = freshId("ts-graph");
    const user = freshId("ana");
    const config = { configurable: { thread_id: thread } };

    await graph(user).invoke({ messages: [new HumanMessage("Bars near Sol?")] }, config);
    const resumed = await graph(user).invoke({ messages: [new HumanMessage("And tapas?")] }, config);

    assert.deepEqual(resumed.messages.map((message) => message.content), ["Bars near Sol?", "Question 1.", "And tapas?", "Question 2."]);
    const note = await new ServiceStore({ client: client() }).get(["notes", user], "last");
    assert.deepEqual(note?.value, { question: "And tapas?" });
    const history = [];
    for await (const snapshot of graph(user).getStateHistory(config)) history.push(snapshot.values);
    assert.ok(history.length >= 4);
  });
});
