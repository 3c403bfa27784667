import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointTuple } from "@langchain/langgraph-checkpoint";

import { ServiceCheckpointSaver, ServiceStore } from "../src/langgraph.js";
import { MemoryClient } from "../src/index.js";
import { apiKey, client, freshId, otherClient, smallPage, smallPageUrl } from "./support.js";

function checkpoint(values: Record<string, unknown>, step: number): Checkpoint {
  const made = emptyCheckpoint();
  made.id = uuid6(step);
  made.channel_values = values;
  made.channel_versions = Object.fromEntries(Object.keys(values).map((name) => [name, step]));
  return made;
}

async function all(listing: AsyncGenerator<CheckpointTuple>): Promise<CheckpointTuple[]> {
  const found: CheckpointTuple[] = [];
  for await (const tuple of listing) found.push(tuple);
  return found;
}

describe("ServiceCheckpointSaver", () => {
  it("puts checkpoints with their writes and reads them back by id, as the latest, and listed", async () => {
    const saver = new ServiceCheckpointSaver({ client: client() });
    const thread = freshId("ts-thread");
    const config = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    const first = checkpoint({ count: 1, messages: [new HumanMessage("hi")] }, 1);
    const second = checkpoint({ count: 2, label: "two" }, 2);

    const firstConfig = await saver.put(config, first, { source: "input", step: -1, parents: {} }, {});
    const secondConfig = await saver.put(firstConfig, second, { source: "loop", step: 0, parents: {} }, {});
    await saver.putWrites(secondConfig, [["label", "three"], ["count", 3]], "task-1", "~__pregel_pull, agent");

    const latest = await saver.getTuple(config);
    assert.equal(latest?.checkpoint.id, second.id);
    assert.deepEqual(latest?.checkpoint.channel_values, { count: 2, label: "two" });
    assert.deepEqual(latest?.pendingWrites, [["task-1", "label", "three"], ["task-1", "count", 3]]);
    assert.deepEqual(latest?.parentConfig?.configurable, { thread_id: thread, checkpoint_ns: "", checkpoint_id: first.id });

    const byId = await saver.getTuple(firstConfig);
    const [message] = byId?.checkpoint.channel_values["messages"] as HumanMessage[];
    assert.ok(message instanceof HumanMessage); // a value JSON cannot hold, through the serializer
    assert.equal(message.content, "hi");

    const listed = await all(saver.list(config));
    assert.deepEqual(listed.map((tuple) => tuple.checkpoint.id), [second.id, first.id]);
    assert.deepEqual((await all(saver.list(config, { limit: 1 }))).map((tuple) => tuple.checkpoint.id), [second.id]);
    assert.deepEqual((await all(saver.list(config, { before: secondConfig }))).map((tuple) => tuple.checkpoint.id), [first.id]);
    assert.deepEqual((await all(saver.list(config, { filter: { source: "input" } }))).map((tuple) => tuple.metadata?.source), ["input"]);

    assert.equal(await new ServiceCheckpointSaver({ client: otherClient() }).getTuple(config), undefined);
    await saver.deleteThread(thread);
    assert.equal(await saver.getTuple(config), undefined);
  });

  it("keeps writes that arrive before their checkpoint's put: they wait for it and are sent again", async () => {
    let refused!: () => void;
    const writesRefused = new Promise<void>((resolve) => (refused = resolve));
    const watching: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).includes("/writes/") && response.status === 404) refused();
      return response;
    };
    const saver = new ServiceCheckpointSaver({ client: client({ fetch: watching }) });
    const config = { configurable: { thread_id: freshId("ts-early"), checkpoint_ns: "" } };
    const early = checkpoint({ count: 1 }, 1);
    const earlyConfig = { configurable: { ...config.configurable, checkpoint_id: early.id } };

    const writing = saver.putWrites(earlyConfig, [["count", 2]], "task-1");
    await writesRefused; // the service does not have the checkpoint yet
    await saver.put(config, early, { source: "loop", step: 0, parents: {} }, {});
    await writing;

    assert.deepEqual((await saver.getTuple(earlyConfig))?.pendingWrites, [["task-1", "count", 2]]);
  });
});

describe("ServiceStore", () => {
  it("puts, gets, searches, lists and deletes items, for its tenant only", async () => {
    const store = new ServiceStore({ client: client() });
    const namespace = ["users", freshId("ana"), "preferences"];

    await store.put(namespace, "food", { likes: "sherry and tapas", level: 2 });
    await store.put(namespace, "music", { likes: "flamenco", level: 5 });

    const item = await store.get(namespace, "food");
    assert.deepEqual(item?.value, { likes: "sherry and tapas", level: 2 });
    assert.ok(item?.createdAt instanceof Date);
    assert.deepEqual((await store.search(namespace)).map((found) => found.key), ["food", "music"]);
    assert.deepEqual((await store.search(namespace, { filter: { level: { $gt: 3 } } })).map((found) => found.key), ["music"]);
    const ranked = await store.search(namespace.slice(0, 2), { query: "flamenco" });
    assert.equal(ranked[0]?.key, "music");
    assert.equal(typeof ranked[0]?.score, "number");
    assert.deepEqual(await store.listNamespaces({ prefix: namespace.slice(0, 2) }), [namespace]);

    assert.equal(await new ServiceStore({ client: otherClient() }).get(namespace, "food"), null);
    await store.delete(namespace, "food");
    assert.equal(await store.get(namespace, "food"), null);
  });
});

describe("a service answering fewer items per page than asked (a lower MEMORY_MAX_PAGE_SIZE)", () => {
  /** A client of that service, and the page sizes each of its requests asked for. */
  function smallPages(): [MemoryClient, unknown[]] {
    const asked: unknown[] = [];
    const recording: typeof fetch = async (input, init) => {
      const limit = new URL(String(input)).searchParams.get("limit");
      const body = typeof init?.body === "string" ? (JSON.parse(init.body) as { operations?: { limit?: number }[] }) : {};
      if (limit !== null) asked.push(Number(limit));
      else if (body.operations) asked.push(body.operations.filter((operation) => "limit" in operation).map((operation) => operation.limit));
      return await fetch(input, init);
    };
    return [new MemoryClient(smallPageUrl, apiKey, { fetch: recording }), asked];
  }

  it("lists every checkpoint in pages of the service's size, and keeps that size", async () => {
    const [small, asked] = smallPages();
    const saver = new ServiceCheckpointSaver({ client: small });
    const thread = { configurable: { thread_id: freshId("ts-pages"), checkpoint_ns: "" } };
    let config: RunnableConfig = thread;
    const saved: string[] = [];
    for (let step = 1; step <= 2 * smallPage + 2; step++) {
      const made = checkpoint({ count: step }, step);
      config = await saver.put(config, made, { source: "loop", step, parents: {} }, {});
      saved.unshift(made.id);
    }
    asked.length = 0;

    const listed = await all(saver.list(thread));
    const firstFive = await all(saver.list(thread, { limit: smallPage + 1 }));

    assert.deepEqual(listed.map((tuple) => tuple.checkpoint.id), saved);
    assert.deepEqual(firstFive.map((tuple) => tuple.checkpoint.id), saved.slice(0, smallPage + 1));
    // The first page refused whole, then the service's size; the later listing in it at once.
    assert.deepEqual(asked, [100, smallPage, smallPage, smallPage, smallPage, 1]);
  });

  it("answers store reads asking for more than a page whole, from pages of the service's size", async () => {
    const [small, asked] = smallPages();
    const store = new ServiceStore({ client: small });
    const prefix = ["ts", freshId("pages")];
    const keys: string[] = [];
    for (let topic = 0; topic < smallPage + 2; topic++) {
      await store.put([...prefix, `topic${topic}`], `${topic}`, { topic });
      keys.push(`${topic}`);
    }
    asked.length = 0;

    const found = await store.search(prefix, { limit: smallPage + 1 });
    const namespaces = await store.listNamespaces({ prefix }); // LangGraph's limit: 100

    assert.deepEqual(found.map((item) => item.key), keys.slice(0, smallPage + 1));
    assert.deepEqual(namespaces, keys.map((topic) => [...prefix, `topic${topic}`]));
    assert.deepEqual(asked, [[smallPage + 1], [smallPage, 1], Array(Math.ceil(100 / smallPage)).fill(smallPage)]);
  });
});
