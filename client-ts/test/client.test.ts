import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  BadRequest,
  Conflict,
  MemoryClient,
  MemoryServiceError,
  NotFound,
  Unauthorized,
  Unreachable,
  type MessageIn,
} from "../src/index.js";
import { apiKey, client, eventually, freshId, otherClient, serviceUrl, smallBatch, smallBatchUrl } from "./support.js";

const memory = client();

describe("messages", () => {
  it("appends messages and reads them back as the window, the message list and the context", async () => {
    const conversation = freshId("ts-append");
    const stored = await memory.append(
      conversation,
      [
        { role: "user", content: "Find me bars near Sol." },
        { role: "assistant", content: "Three bars: Salmon Guru, Ojalá, La Venencia." },
      ],
      { user_id: "ana" },
    );

    assert.deepEqual(stored.map((message) => message.role), ["user", "assistant"]);
    assert.ok(stored[0]!.seq < stored[1]!.seq);
    assert.match(stored[0]!.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const window = await memory.window(conversation, { format: "openai" });
    assert.deepEqual(window, [
      { role: "user", content: "Find me bars near Sol." },
      { role: "assistant", content: "Three bars: Salmon Guru, Ojalá, La Venencia." },
    ]);
    const listed = await memory.messages(conversation);
    assert.deepEqual(listed.map((message) => message.id), stored.map((message) => message.id));
    assert.equal((await memory.getMessage(conversation, stored[1]!.id))?.content, "Three bars: Salmon Guru, Ojalá, La Venencia.");

    const context = await memory.context(conversation, { query: "Which has live music?", system_prompt: "You plan trips.", max_tokens: 2000 });
    assert.deepEqual(context.messages.at(0), { role: "system", content: "You plan trips." });
    assert.deepEqual(context.messages.at(-1), { role: "user", content: "Which has live music?" });
    assert.equal(context.messages.length, 4);
    assert.ok(context.estimated_tokens > 0 && context.tokens_remaining < 2000);
  });

  it("stores a batch sent twice with the same ids once", async () => {
    const conversation = freshId("ts-twice");
    const batch: MessageIn[] = [
      { role: "user", content: "Is La Venencia open late?" },
      { role: "assistant", content: "Until 1:30." },
    ];
    const first = await memory.append(conversation, batch);

    const again = await memory.append(conversation, first.map(({ id, role, content }) => ({ id, role, content })));

    assert.deepEqual(again.map((message) => [message.id, message.seq]), first.map((message) => [message.id, message.seq]));
    assert.equal((await memory.messages(conversation)).length, 2);
    assert.equal((await memory.getConversation(conversation))?.message_count, 2);
  });

  it("resends the same ids when the answer to an append is lost, and the service stores the messages once", async () => {
    const conversation = freshId("ts-retry");
    const sent: string[] = [];
    let answersLost = 0;
    const losingFirstAnswer: typeof fetch = async (input, init) => {
      sent.push(String(init?.body));
      const response = await fetch(input, init);
      if (init?.method === "POST" && answersLost === 0) {
        answersLost += 1;
        await response.arrayBuffer();
        throw new TypeError("fetch failed: the connection dropped before the answer");
      }
      return response;
    };
    const flaky = client({ fetch: losingFirstAnswer });

    const stored = await flaky.append(conversation, [
      { role: "user", content: "Book a table for two." },
      { role: "assistant", content: "Done: 21:00 at Ojalá." },
    ]);

    assert.equal(sent.length, 2);
    assert.equal(sent[0], sent[1]); // the same body, ids included
    assert.ok(stored[0]!.seq < stored[1]!.seq);
    const kept = await memory.messages(conversation);
    assert.deepEqual(kept.map((message) => message.id), stored.map((message) => message.id));
  });

  it("answers the conversation a lost create made when its resend meets the conflict", async () => {
    const conversation = freshId("ts-create");
    let lost = false;
    const losingFirstAnswer: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === "POST" && !lost) {
        lost = true;
        await response.arrayBuffer();
        throw new TypeError("fetch failed: the connection dropped before the answer");
      }
      return response;
    };
    const fields = { user_id: "ana", metadata: { trip: "Madrid", nights: 3 } };

    const created = await client({ fetch: losingFirstAnswer }).createConversation(conversation, fields);

    assert.ok(lost);
    assert.equal(created.conversation_id, conversation);
    assert.deepEqual(created.metadata, { trip: "Madrid", nights: 3 });
    await assert.rejects(memory.createConversation(conversation, fields), Conflict); // a second create is one
  });

  it("retries a 503 after its Retry-After, and a 429 that asks for a short wait", async () => {
    const conversation = freshId("ts-503");
    const statuses = [503, 429];
    const busyFirst: typeof fetch = async (input, init) => {
      const status = statuses.shift();
      if (status !== undefined) {
        const error = { error: { code: status === 503 ? "cache_unavailable" : "throttled", message: "Busy.", details: {} } };
        return new Response(JSON.stringify(error), { status, headers: { "Retry-After": "0", "Content-Type": "application/json" } });
      }
      return await fetch(input, init);
    };

    const stored = await client({ fetch: busyFirst }).appendMessage(conversation, { role: "user", content: "Hello" });

    assert.equal((await memory.messages(conversation)).length, 1);
    assert.equal(stored.content, "Hello");
    assert.deepEqual(statuses, []);
  });

  it("refuses a value no JSON body can carry, naming its field, before sending anything", async () => {
    const conversation = freshId("ts-nan");
    await assert.rejects(
      memory.append(conversation, [
        { role: "user", content: "fine" },
        { role: "user", content: "score", metadata: { score: Number.NaN } },
      ]),
      (error: unknown) => {
        assert.ok(error instanceof BadRequest);
        assert.equal(error.code, "validation_error");
        assert.equal(error.details["field"], "messages[1].metadata.score");
        return true;
      },
    );
    assert.equal(await memory.getConversation(conversation), undefined);
  });

  it("refuses a conversation id the service would refuse, before sending anything", async () => {
    await assert.rejects(memory.window("../etc"), TypeError);
  });
});

describe("errors", () => {
  it("throws NotFound with the service's code for the context of a conversation that does not exist", async () => {
    await assert.rejects(memory.context(freshId("ts-missing")), (error: unknown) => {
      assert.ok(error instanceof NotFound);
      assert.ok(error instanceof MemoryServiceError);
      assert.equal(error.status, 404);
      assert.equal(error.code, "not_found");
      return true;
    });
  });

  it("answers an empty value for reads of what does not exist", async () => {
    const conversation = freshId("ts-empty");
    assert.deepEqual(await memory.window(conversation), []);
    assert.deepEqual(await memory.messages(conversation), []);
    assert.equal(await memory.getConversation(conversation), undefined);
    assert.equal(await memory.getMemory(conversation), undefined);
    assert.deepEqual(await memory.summaries(conversation), []);
    assert.equal(await memory.latestCheckpoint(conversation), undefined);
    assert.deepEqual(await memory.eraseConversation(conversation), { conversation_id: conversation, messages_erased: 0, cache_keys_erased: 0 });
  });

  it("throws BadRequest naming the field the service refused", async () => {
    const conversation = freshId("ts-bad");
    await memory.appendMessage(conversation, { role: "user", content: "dinner in Lisbon" });

    await assert.rejects(memory.search(conversation, "dinner", { top_k: 5000 }), (error: unknown) => {
      assert.ok(error instanceof BadRequest);
      assert.equal(error.code, "limit_exceeded");
      assert.equal(error.details["field"], "top_k");
      assert.equal(error.details["limit"], 500);
      return true;
    });
    await assert.rejects(
      memory.append(conversation, [
        { role: "user", content: "fine" },
        { role: "robot" as "user", content: "Hello" },
      ]),
      (error: unknown) => {
        assert.ok(error instanceof BadRequest);
        assert.equal(error.code, "validation_error");
        assert.match(error.message, /^messages\.1\.role: "robot" is not a valid choice/);
        return true;
      },
    );
    assert.equal((await memory.messages(conversation)).length, 1); // the refused batch stored nothing
  });

  it("sends a long batch in parts and names a refused message by its index in the whole batch", async () => {
    const conversation = freshId("ts-long");
    const batch: MessageIn[] = Array.from({ length: 150 }, (_, index) => ({ role: "user", content: `message ${index}` }));
    batch[120] = { role: "robot" as "user", content: "Hello" };

    await assert.rejects(memory.append(conversation, batch), (error: unknown) => {
      assert.ok(error instanceof BadRequest);
      assert.match(error.message, /^messages\.120\.role: /);
      assert.equal(error.details["applied"], 100);
      return true;
    });
    assert.equal((await memory.messages(conversation, { limit: 500 })).length, 100);
  });

  it("sends a batch in parts of the service's own limit once it refuses a longer part, same ids, same order", async () => {
    const sizes: number[] = [];
    const counting: typeof fetch = async (input, init) => {
      const body = typeof init?.body === "string" ? (JSON.parse(init.body) as Record<string, unknown[]>) : {};
      const items = body["messages"] ?? body["writes"] ?? body["operations"];
      if (items !== undefined) sizes.push(items.length);
      return await fetch(input, init);
    };
    const small = new MemoryClient(smallBatchUrl, apiKey, { fetch: counting });
    const conversation = freshId("ts-small-batches");
    const batch: MessageIn[] = Array.from({ length: 2 * smallBatch + 1 }, (_, index) => ({ role: "user", content: `turn ${index}` }));

    const stored = await small.append(conversation, batch);
    const again = await small.append(conversation, stored.map(({ id, role, content }) => ({ id, role, content }) as MessageIn));
    const namespace = ["ts", freshId("small")];
    const results = await small.storeBatch([
      ...Array.from({ length: smallBatch + 1 }, (_, index) => ({ op: "put", namespace, key: `${index}`, value: { n: index } }) as const),
      { op: "get", namespace, key: `${smallBatch}` },
    ]);

    assert.deepEqual(stored.map((message) => message.content), batch.map((message) => message.content));
    assert.deepEqual(again.map((message) => [message.id, message.seq]), stored.map((message) => [message.id, message.seq]));
    assert.deepEqual((results.at(-1) as { value: unknown }).value, { n: smallBatch });
    // The first part refused whole, then the service's size, for the later batches at once.
    const parts = [smallBatch, smallBatch, 1];
    assert.deepEqual(sizes, [2 * smallBatch + 1, ...parts, ...parts, smallBatch, 2]);
    assert.deepEqual((await memory.messages(conversation)).map((message) => message.id), stored.map((message) => message.id));
  });

  it("throws Unauthorized for a key the service does not know", async () => {
    const stranger = new MemoryClient(serviceUrl, "not-a-key");
    await assert.rejects(stranger.status(), (error: unknown) => {
      assert.ok(error instanceof Unauthorized);
      assert.equal(error.status, 401);
      assert.equal(error.code, "authentication_failed");
      return true;
    });
  });

  it("throws Unreachable after the retries when nothing answers", async () => {
    const nowhere = new MemoryClient("http://127.0.0.1:9", "key", { retries: 1, timeout: 2000 });
    await assert.rejects(nowhere.status(), (error: unknown) => {
      assert.ok(error instanceof Unreachable);
      assert.equal(error.status, null);
      assert.equal(error.code, "unreachable");
      return true;
    });
  });

  it("stops at once, without retrying, when the caller's signal aborts", async () => {
    let attempts = 0;
    const hanging: typeof fetch = (_input, init) => {
      attempts += 1;
      return new Promise((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)));
    };
    const controller = new AbortController();
    const call = client({ fetch: hanging }).status({ signal: controller.signal });
    controller.abort(new Error("the user left"));

    await assert.rejects(call, /the user left/);
    assert.equal(attempts, 1);
  });
});

describe("tenants", () => {
  it("never shows one tenant's data to another", async () => {
    const conversation = freshId("ts-private");
    const user = freshId("ts-user");
    await memory.append(conversation, [{ role: "user", content: "My passport number is X123." }], { user_id: user });
    await memory.setFact(user, "passport", "X123");
    const other = otherClient();

    assert.equal(await other.getConversation(conversation), undefined);
    assert.deepEqual(await other.window(conversation), []);
    assert.deepEqual(await other.messages(conversation), []);
    await assert.rejects(other.context(conversation), NotFound);
    assert.equal(await other.getFact(user, "passport"), undefined);
    assert.deepEqual((await other.listFacts(user)).facts, []);
    assert.equal((await other.listConversations({ user_id: user })).count, 0);
    assert.equal((await memory.listConversations({ user_id: user })).count, 1);
  });
});

describe("the rest of the API", () => {
  it("keeps conversations, memory documents, facts and their history", async () => {
    const conversation = freshId("ts-conversation");
    const user = freshId("ts-user");

    const created = await memory.createConversation(conversation, { user_id: user, agent_id: "travel", metadata: { plan: "bars" } });
    assert.equal(created.user_id, user);
    const updated = await memory.updateConversation(conversation, { metadata: { plan: "dinner" } });
    assert.deepEqual(updated.metadata, { plan: "dinner" });
    assert.equal((await memory.getConversation(conversation))?.agent_id, "travel");

    await memory.putMemory(conversation, { messages: [{ role: "user", content: "hi" }], metadata: { step: 1 } });
    const document = await memory.getMemory(conversation);
    assert.deepEqual(document?.messages, [{ role: "user", content: "hi" }]);

    const written = await memory.setFacts(user, { home_city: "Madrid", diet: "vegetarian" });
    assert.deepEqual([...written.created].sort(), ["diet", "home_city"]);
    await memory.setFact(user, "home_city", "Lisbon");
    assert.equal((await memory.getFact(user, "home_city"))?.value, "Lisbon");
    assert.deepEqual((await memory.factHistory(user, "home_city")).results.map((change) => change.value), ["Lisbon", "Madrid"]);
    await memory.deleteFact(user, "diet");
    assert.equal(await memory.getFact(user, "diet"), undefined);
    assert.equal((await memory.userFactHistory(user)).count, 4);
    assert.deepEqual((await memory.listFacts(user)).facts.map((fact) => fact.key), ["home_city"]);

    const memories = await memory.listMemories(user);
    assert.equal(memories.count, 0);
    assert.equal(typeof memories.extraction.enabled, "boolean");
    assert.equal(await memory.getUserMemory(user, "00000000-0000-4000-8000-000000000000"), undefined);

    await memory.clear(conversation);
    assert.deepEqual(await memory.messages(conversation), []);
    const erased = await memory.eraseUser(user);
    assert.equal(erased.conversations_erased, 1);
    assert.equal(await memory.getConversation(conversation), undefined);
  });

  it("searches a conversation and a user's history once the worker has persisted it, and summarises it", async () => {
    const conversation = freshId("ts-search");
    const user = freshId("ts-user");
    await memory.append(
      conversation,
      [
        { role: "user", content: "We want flamenco tonight." },
        { role: "assistant", content: "Casa Patas has a flamenco show at 22:00." },
        { role: "user", content: "And tapas before?" },
        { role: "assistant", content: "Try La Venencia for sherry and tapas." },
      ],
      { user_id: user },
    );

    const found = await eventually(async () => {
      const result = await memory.search(conversation, "flamenco show", { mode: "keyword" });
      return result.results.length > 0 && result;
    }, "the messages to be persisted and searchable");
    assert.match(found.results[0]!.content, /flamenco/);
    const filtered = await memory.searchUser(user, "tapas", { mode: "keyword", role: ["assistant"] });
    assert.deepEqual(filtered.results.map((hit) => hit.role), ["assistant"]);
    // With memories asked for: one ranking whose results say their kind (this tenant extracts none).
    const fused = await memory.searchUserWithMemories(user, "tapas", { mode: "keyword", top_k: 2 });
    assert.equal(fused.memories_considered, 0);
    assert.deepEqual(fused.results.map((hit) => hit.kind), ["turn", "turn"]);
    const turn = fused.results[0]!;
    assert.ok(turn.kind === "turn" && /tapas/.test(turn.content) && turn.memory_ids.length === 0);
    const fusedFiltered = await memory.searchUserWithMemories(user, "tapas", {
      mode: "keyword",
      role: ["assistant"],
      include_past_memories: true,
    });
    assert.deepEqual(fusedFiltered.results.map((hit) => (hit.kind === "turn" ? hit.role : hit.kind)), ["assistant"]);
    const coverage = await memory.searchStatus(user);
    assert.equal(coverage.user_id, user);

    const summary = await memory.summarize(conversation);
    assert.ok(summary.text.length > 0);
    assert.equal((await memory.summaries(conversation))[0]?.text, summary.text);
  });

  it("answers the status and the API root", async () => {
    const status = await memory.status();
    assert.equal(status.ok, true);
    assert.equal(status.scope, "tenant");
    const usage = await memory.usage({ days: 2 });
    assert.equal(usage.days, 2);
    const root = await memory.apiRoot();
    assert.ok("version" in root);
  });

  it("stores checkpoints and their writes", async () => {
    const conversation = freshId("ts-checkpoints");
    await memory.putCheckpoint(conversation, { checkpoint_id: "c1", state: { step: 1 } });
    await memory.putCheckpoint(conversation, { checkpoint_id: "c2", parent_id: "c1", state: { step: 2 }, metadata: { source: "loop" } });
    await memory.putWrites(conversation, "c2", { task_id: "task-1", writes: [{ idx: 0, channel: "messages", value: { json: "hi" } }] });

    const latest = await memory.latestCheckpoint(conversation);
    assert.equal(latest?.checkpoint_id, "c2");
    assert.deepEqual(latest?.writes.map((write) => write.channel), ["messages"]);
    assert.deepEqual((await memory.getCheckpoint(conversation, "c1"))?.state, { step: 1 });
    assert.deepEqual((await memory.listCheckpoints(conversation)).map((checkpoint) => checkpoint.checkpoint_id), ["c2", "c1"]);
    await memory.deleteCheckpoints(conversation);
    assert.deepEqual(await memory.listCheckpoints(conversation), []);
  });

  it("keeps store items, by item and in batches", async () => {
    const namespace = ["ts", freshId("prefs")];
    await memory.putStoreItem({ namespace, key: "food", value: { likes: "sherry and tapas" } });
    assert.deepEqual((await memory.getStoreItem(namespace, "food"))?.value, { likes: "sherry and tapas" });
    const items = await memory.searchStore({ namespace_prefix: namespace });
    assert.deepEqual(items.map((item) => item.key), ["food"]);
    assert.ok((await memory.listStoreNamespaces({ prefix: namespace })).some((found) => found.join("/") === namespace.join("/")));
    await memory.deleteStoreItem(namespace, "food");
    assert.equal(await memory.getStoreItem(namespace, "food"), undefined);

    const results = await memory.storeBatch([
      { op: "put", namespace, key: "a", value: { n: 1 } },
      { op: "get", namespace, key: "a" },
      { op: "delete", namespace, key: "a" },
      { op: "get", namespace, key: "a" },
    ]);
    assert.equal(results[0], null);
    assert.deepEqual((results[1] as { value: unknown }).value, { n: 1 });
    assert.equal(results[3], null);
    assert.equal(await otherClient().getStoreItem(namespace, "a"), undefined);
  });
});
