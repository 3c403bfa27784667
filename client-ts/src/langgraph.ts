/**
 * LangGraph.js persistence kept in the memory service (`memory-client/langgraph`; needs
 * `@langchain/langgraph-checkpoint` and `@langchain/core`).
 *
 * {@link ServiceCheckpointSaver} is a `BaseCheckpointSaver` over the service's checkpoint API, with the
 * semantics of LangGraph's `MemorySaver`:
 *
 * - `thread_id` is the conversation id (letters, digits and `. _ @ = + -`) and `checkpoint_ns` the namespace.
 * - A checkpoint is stored as `state`: its fields as plain JSON, plus `channel_values` with each value
 *   encoded. A value (channel value or pending write) is stored as `{"json": value}` when it is JSON
 *   that comes back equal from storage, and as `{"type", "data": base64}` from the serializer's
 *   `dumpsTyped` otherwise (messages and other class instances); a checkpoint field that is not plain
 *   JSON is kept the second way under `state.typed_fields`. Every checkpoint carries all its channel
 *   values: the service retires old checkpoints (it keeps the newest `MEMORY_MAX_CHECKPOINTS`).
 * - Metadata is stored as JSON; `list`'s `filter` compares its values for equality, on the client.
 * - "Newest" is the order the service saved checkpoints in. A missing conversation or checkpoint reads
 *   as `undefined` / nothing; deleting a thread that does not exist does nothing.
 * - `list` asks the service for pages of 100 checkpoints; a service answering fewer per page (a lower
 *   `MEMORY_MAX_PAGE_SIZE`) refuses such a page naming its limit, and the saver asks that page again,
 *   and its later pages, in the service's size.
 * - LangGraph saves a task's writes while the put of the checkpoint they belong to may still be on its
 *   way, and the service takes writes only for a stored checkpoint. Writes the service answers "not
 *   found" to therefore wait (up to 30 s) for this saver's put of that checkpoint, then are sent
 *   again; if no such put comes, the `NotFound` is thrown.
 *
 * {@link ServiceStore} is a `BaseStore` (LangGraph's long-term memory) over the service's store API:
 * every method goes through `batch`, one request of up to `MAX_BATCH` operations, applied in order
 * in one transaction. Items are durable once a call returns and shared by every process with a key of
 * the tenant. A search with a `query` is ranked by the service's hybrid search (BM25 and its own
 * embedding model) over each item's text (`index` on put: `false` not searchable, a list of field
 * paths, or this store's `index.fields`, else the whole value); without one, items come in the order
 * they were first written. Filters: equality, `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`. A search or
 * namespace listing asking for more items than the service answers at once (its `MEMORY_MAX_PAGE_SIZE`)
 * is sent as consecutive pages of that size in the same batch and answered as one list: the service
 * refuses the longer page naming its limit, with nothing applied, and the store sends the batch again so.
 */

import { isDeepStrictEqual } from "node:util";

import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  BaseStore,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  getCheckpointId,
  validateNamespace,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type Item,
  type Operation,
  type OperationResults,
  type PendingWrite,
  type SearchItem,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";

import { MemoryClient, type ClientOptions, type StoreOperation } from "./client.js";
import { MemoryServiceError, NotFound } from "./errors.js";
import { hasLoneSurrogate } from "./ids.js";
import type { Checkpoint as StoredCheckpoint } from "./types.js";

const PAGE_SIZE = 100;
/** How long writes for a checkpoint not stored yet wait for this saver's put of it, and how many recent puts it remembers for that. */
const PUT_WAIT_MS = 30_000;
const TRACKED_PUTS = 1024;
const TYPED_FIELDS = "typed_fields";
/** Numbers of this magnitude or more come back from PostgreSQL's jsonb written otherwise (1e+16); they are typed instead. */
const FLOAT_BOUND = 1e16;

type Json = Record<string, unknown>;
/** A value as stored: readable JSON, or the serializer's typed bytes in base64. */
export type StoredValue = { json: unknown } | { type: string; data: string };

export interface ServiceConnection {
  /** A client of the service; or `baseUrl` and `apiKey` to make one. */
  client?: MemoryClient;
  baseUrl?: string;
  apiKey?: string;
  clientOptions?: ClientOptions;
}

function clientOf(connection: ServiceConnection): MemoryClient {
  if (connection.client !== undefined) return connection.client;
  if (!connection.baseUrl || !connection.apiKey) throw new TypeError("Pass a MemoryClient, or baseUrl and apiKey to make one.");
  return new MemoryClient(connection.baseUrl, connection.apiKey, connection.clientOptions);
}

/** Whether `value` is JSON that storage gives back equal. */
export function isPlainJson(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    // A loop, not recursion: deep values must not exhaust the stack.
    const item = pending.pop();
    if (item === null || typeof item === "boolean") continue;
    if (typeof item === "string") {
      if (item.includes("\u0000") || hasLoneSurrogate(item)) return false;
    } else if (typeof item === "number") {
      if (!Number.isFinite(item) || Math.abs(item) >= FLOAT_BOUND || Object.is(item, -0)) return false;
    } else if (Array.isArray(item)) {
      pending.push(...item);
    } else if (typeof item === "object" && [Object.prototype, null].includes(Object.getPrototypeOf(item))) {
      for (const [key, child] of Object.entries(item as Json)) {
        if (key.includes("\u0000") || hasLoneSurrogate(key)) return false;
        pending.push(child);
      }
    } else {
      return false;
    }
  }
  return true;
}

function threadIdOf(config: RunnableConfig | undefined): string {
  const threadId = config?.configurable?.["thread_id"];
  if (threadId === undefined || threadId === null || threadId === "") {
    throw new TypeError('A thread_id is required: pass { configurable: { thread_id: "<conversation id>" } }.');
  }
  return String(threadId);
}

function namespaceOf(config: RunnableConfig): string {
  return String(config.configurable?.["checkpoint_ns"] ?? "");
}

/** (idx, channel, value) with MemorySaver's index: a regular write keeps its position, a special channel's later write replaces its earlier one. */
function indexedWrites(writes: readonly PendingWrite[]): Array<[number, string, unknown]> {
  const byIdx = new Map<number, [number, string, unknown]>();
  writes.forEach(([channel, value], position) => {
    const idx = WRITES_IDX_MAP[channel] ?? position;
    if (idx >= 0 && byIdx.has(idx)) return;
    byIdx.set(idx, [idx, channel, value]);
  });
  return [...byIdx.values()];
}

/** LangGraph checkpoints of the memory service: one thread per conversation. */
export class ServiceCheckpointSaver extends BaseCheckpointSaver<number> {
  readonly client: MemoryClient;
  /** The recent puts, by thread, namespace and checkpoint id, settled once stored: writes that came first wait for them. */
  readonly #stored = new Map<string, Settled>();

  constructor(connection: ServiceConnection = {}, serde?: SerializerProtocol) {
    super(serde);
    this.client = clientOf(connection);
  }

  // --- encoding ------------------------------------------------------------------------------------

  /** A channel value or pending write as stored: readable JSON when it can be. */
  async encodeValue(value: unknown): Promise<StoredValue> {
    if (isPlainJson(value)) return { json: value };
    const [type, data] = await this.serde.dumpsTyped(value);
    return { type, data: Buffer.from(data).toString("base64") };
  }

  async decodeValue(stored: StoredValue): Promise<unknown> {
    if ("json" in stored) return stored.json;
    return await this.serde.loadsTyped(stored.type, new Uint8Array(Buffer.from(stored.data, "base64")));
  }

  async encodeCheckpoint(checkpoint: Checkpoint): Promise<Json> {
    const state: Json = {};
    const typed: Json = {};
    for (const [name, value] of Object.entries(checkpoint)) {
      if (name === "channel_values") continue;
      if (isPlainJson(value)) state[name] = value;
      else typed[name] = await this.encodeValue(value);
    }
    if (Object.keys(typed).length > 0) state[TYPED_FIELDS] = typed;
    const values: Json = {};
    for (const [name, value] of Object.entries(checkpoint.channel_values)) values[name] = await this.encodeValue(value);
    state["channel_values"] = values;
    return state;
  }

  async decodeCheckpoint(state: Json): Promise<Checkpoint> {
    const fields: Json = {};
    for (const [name, value] of Object.entries(state)) {
      if (name !== "channel_values" && name !== TYPED_FIELDS) fields[name] = value;
    }
    for (const [name, value] of Object.entries((state[TYPED_FIELDS] ?? {}) as Record<string, StoredValue>)) {
      fields[name] = await this.decodeValue(value);
    }
    const versions = (fields["channel_versions"] ?? {}) as Json;
    const values: Json = {};
    // As MemorySaver: the values of the channels the checkpoint has a version of.
    for (const [name, value] of Object.entries((state["channel_values"] ?? {}) as Record<string, StoredValue>)) {
      if (name in versions) values[name] = await this.decodeValue(value);
    }
    return { ...fields, channel_values: values } as unknown as Checkpoint;
  }

  async #tuple(threadId: string, stored: StoredCheckpoint, config?: RunnableConfig): Promise<CheckpointTuple> {
    const namespace = stored.namespace;
    const writes = [...stored.writes].sort((a, b) =>
      compareWritesSortKeys(writesSortKey(a.task_path, a.task_id, a.idx), writesSortKey(b.task_path, b.task_id, b.idx)),
    );
    const pendingWrites: CheckpointPendingWrite[] = [];
    for (const write of writes) {
      pendingWrites.push([write.task_id, write.channel, await this.decodeValue(write.value as StoredValue)]);
    }
    const tuple: CheckpointTuple = {
      config: config ?? { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: stored.checkpoint_id } },
      checkpoint: await this.decodeCheckpoint(stored.state as Json),
      metadata: stored.metadata as CheckpointMetadata,
      pendingWrites,
    };
    if (stored.parent_id) {
      tuple.parentConfig = { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: stored.parent_id } };
    }
    return tuple;
  }

  // --- BaseCheckpointSaver -------------------------------------------------------------------------

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = threadIdOf(config);
    const namespace = namespaceOf(config);
    const checkpointId = getCheckpointId(config);
    if (checkpointId) {
      const stored = await this.client.getCheckpoint(threadId, checkpointId, { namespace });
      return stored === undefined ? undefined : await this.#tuple(threadId, stored, config);
    }
    const stored = await this.client.latestCheckpoint(threadId, { namespace });
    return stored === undefined ? undefined : await this.#tuple(threadId, stored);
  }

  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const threadId = threadIdOf(config); // the service lists the checkpoints of one thread (conversation)
    const namespace = config.configurable?.["checkpoint_ns"] as string | undefined;
    const only = getCheckpointId(config);
    const filter = Object.entries(options.filter ?? {});
    let remaining = options.limit;
    let cursor = options.before ? getCheckpointId(options.before) || undefined : undefined;
    const seen = new Set<string>();
    if (remaining !== undefined && remaining <= 0) return;
    for (;;) {
      const pageSize = this.client.pageSize(PAGE_SIZE);
      const size = remaining !== undefined && filter.length === 0 && !only ? Math.min(pageSize, remaining) : pageSize;
      let page: StoredCheckpoint[];
      try {
        page = await this.client.listCheckpoints(threadId, { namespace, before: cursor, limit: size });
      } catch (error) {
        if (this.client.learnPageLimit(error, "limit", size)) continue; // the same page again, in the service's size
        throw error;
      }
      for (const stored of page) {
        const key = `${stored.namespace}\u0000${stored.checkpoint_id}`;
        if (seen.has(key)) continue; // a cursor naming checkpoints of two namespaces may repeat one
        seen.add(key);
        if (only && stored.checkpoint_id !== only) continue;
        const metadata = (stored.metadata ?? {}) as Json;
        if (!filter.every(([name, value]) => sameJson(metadata[name], value))) continue;
        yield await this.#tuple(threadId, stored);
        if (remaining !== undefined && --remaining <= 0) return;
      }
      if (page.length < size) return;
      cursor = page[page.length - 1]!.checkpoint_id;
    }
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    _newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = threadIdOf(config);
    const namespace = namespaceOf(config);
    await this.client.putCheckpoint(threadId, {
      checkpoint_id: checkpoint.id,
      namespace,
      parent_id: (config.configurable?.["checkpoint_id"] as string | undefined) ?? null,
      state: await this.encodeCheckpoint(checkpoint),
      metadata: JSON.parse(JSON.stringify(metadata ?? {})),
    });
    this.#storedOnce(putKey(threadId, namespace, checkpoint.id)).settle();
    return { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    if (writes.length === 0) return;
    const threadId = threadIdOf(config);
    const namespace = namespaceOf(config);
    const checkpointId = config.configurable?.["checkpoint_id"] as string | undefined;
    if (!checkpointId) throw new TypeError("Writes need the checkpoint_id of the checkpoint they belong to.");
    const encoded = [];
    for (const [idx, channel, value] of indexedWrites(writes)) encoded.push({ idx, channel, value: await this.encodeValue(value) });
    const task = { namespace, task_id: taskId, task_path: taskPath, writes: encoded };
    try {
      await this.client.putWrites(threadId, checkpointId, task);
    } catch (error) {
      if (!(error instanceof NotFound) || error.code !== "not_found") throw error;
      if (!(await this.#storedOnce(putKey(threadId, namespace, checkpointId)).within(PUT_WAIT_MS))) throw error;
      await this.client.putWrites(threadId, checkpointId, task);
    }
  }

  /** Settled once this saver has stored the checkpoint. */
  #storedOnce(key: string): Settled {
    let stored = this.#stored.get(key);
    if (stored === undefined) {
      stored = new Settled();
      this.#stored.set(key, stored);
      for (const oldest of this.#stored.keys()) {
        if (this.#stored.size <= TRACKED_PUTS) break;
        this.#stored.delete(oldest);
      }
    }
    return stored;
  }

  override async deleteThread(threadId: string): Promise<void> {
    await this.client.deleteCheckpoints(threadId);
  }
}

/** An event that happens once. */
class Settled {
  #settled = false;
  readonly #waiting: Array<() => void> = [];

  settle(): void {
    this.#settled = true;
    for (const wake of this.#waiting.splice(0)) wake();
  }

  /** Whether it happened, or happens within `milliseconds`. */
  within(milliseconds: number): Promise<boolean> {
    if (this.#settled) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), milliseconds);
      this.#waiting.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

function putKey(threadId: string, namespace: string, checkpointId: string): string {
  return JSON.stringify([threadId, namespace, checkpointId]);
}

function sameJson(stored: unknown, wanted: unknown): boolean {
  return isDeepStrictEqual(stored, wanted);
}

// --- the store ----------------------------------------------------------------------------------------

export interface ServiceStoreOptions extends ServiceConnection {
  /** The field paths items are searched by when a put names none (the whole value otherwise). */
  index?: { fields?: string[] };
  /** Minutes an item lives after each put (and after each read, which refreshes it); forever when not given. */
  defaultTtl?: number;
}

interface StoredItem {
  namespace: string[];
  key: string;
  value: Json;
  created_at: string;
  updated_at: string;
  score?: number | null;
}

/** A LangGraph store whose items live in the memory service, for one tenant. */
export class ServiceStore extends BaseStore {
  readonly client: MemoryClient;
  readonly indexFields: string[] | undefined;
  readonly defaultTtl: number | undefined;

  constructor(options: ServiceStoreOptions = {}) {
    super();
    this.client = clientOf(options);
    const fields = options.index?.fields;
    this.indexFields = fields === undefined || (fields.length === 1 && fields[0] === "$") ? undefined : [...fields];
    this.defaultTtl = options.defaultTtl;
  }

  override async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const requests = operations.map((operation) => this.#operation(operation));
    for (;;) {
      const [sent, counts] = inPages(requests, (limit) => this.client.pageSize(limit));
      let answers: unknown[];
      try {
        answers = await this.client.storeBatch(sent);
      } catch (error) {
        if (this.#refusedPage(error, sent)) continue;
        throw error;
      }
      return joined(answers, counts).map((answer, index) => resultOf(answer, requests[index]!)) as OperationResults<Op>;
    }
  }

  /**
   * Whether the service refused an operation of `sent` as a page of more items than it answers at
   * once, with nothing applied: the batch is then sent again in pages of its size. After earlier parts
   * of a long batch were applied the error is thrown, the size learnt all the same.
   */
  #refusedPage(error: unknown, sent: readonly StoreOperation[]): boolean {
    if (!(error instanceof MemoryServiceError)) return false;
    const refused = REFUSED_PAGE.exec(String(error.details["field"] ?? ""));
    const asked = refused ? (sent[Number(refused[1])] as { limit?: unknown } | undefined)?.limit : undefined;
    if (!refused || typeof asked !== "number") return false;
    return this.client.learnPageLimit(error, refused[0], asked) && !error.details["applied"];
  }

  #operation(operation: Operation): StoreOperation {
    if ("namespacePrefix" in operation) {
      return {
        op: "search",
        namespace_prefix: [...operation.namespacePrefix],
        query: operation.query ?? null,
        filter: operation.filter ?? null,
        limit: operation.limit ?? 10,
        offset: operation.offset ?? 0,
        refresh_ttl: true,
      };
    }
    if ("value" in operation) {
      validateNamespace(operation.namespace);
      if (operation.value === null) return { op: "delete", namespace: [...operation.namespace], key: String(operation.key) };
      const index = operation.index === false ? false : (operation.index ?? this.indexFields ?? null);
      return {
        op: "put",
        namespace: [...operation.namespace],
        key: String(operation.key),
        value: operation.value,
        index,
        ttl: this.defaultTtl ?? null,
      };
    }
    if ("key" in operation && "namespace" in operation) {
      return { op: "get", namespace: [...operation.namespace], key: String(operation.key), refresh_ttl: true };
    }
    return {
      op: "list_namespaces",
      match_conditions: (operation.matchConditions ?? []).map((condition) => ({ match_type: condition.matchType, path: [...condition.path] })),
      max_depth: operation.maxDepth ?? null,
      limit: operation.limit,
      offset: operation.offset,
    };
  }
}

/** The reads a page limit applies to, and the field the service names when it refuses one's limit. */
const PAGED = new Set(["search", "list_namespaces"]);
const REFUSED_PAGE = /^operations\[(\d+)\]\.limit$/;

/**
 * The operations to send, each read asking for more than `pageSize(limit)` items sent as consecutive
 * pages of that size (one after the other's offset), and how many each one became.
 */
function inPages(operations: readonly StoreOperation[], pageSize: (limit: number) => number): [StoreOperation[], number[]] {
  const sent: StoreOperation[] = [];
  const counts: number[] = [];
  for (const operation of operations) {
    const { limit, offset } = operation as { limit?: number | null; offset?: number | null };
    const size = PAGED.has(operation.op) && typeof limit === "number" ? pageSize(limit) : undefined;
    if (size === undefined || size >= limit!) {
      sent.push(operation);
      counts.push(1);
      continue;
    }
    const pages: StoreOperation[] = [];
    for (let first = 0; first < limit!; first += size) {
      pages.push({ ...operation, limit: Math.min(size, limit! - first), offset: (offset ?? 0) + first } as StoreOperation);
    }
    sent.push(...pages);
    counts.push(pages.length);
  }
  return [sent, counts];
}

/** The answer of each operation given to `inPages`: its pages' items as one list. */
function joined(answers: readonly unknown[], counts: readonly number[]): unknown[] {
  const found: unknown[] = [];
  let position = 0;
  for (const count of counts) {
    found.push(count === 1 ? answers[position] : answers.slice(position, position + count).flat());
    position += count;
  }
  return found;
}

function resultOf(answer: unknown, operation: StoreOperation): Item | SearchItem[] | string[][] | null | undefined {
  switch (operation.op) {
    case "get":
      return answer === null || answer === undefined ? null : itemOf(answer as StoredItem);
    case "search":
      return (answer as StoredItem[]).map((stored) => ({ ...itemOf(stored), ...(typeof stored.score === "number" ? { score: stored.score } : {}) }));
    case "list_namespaces":
      return (answer as string[][]).map((namespace) => [...namespace]);
    default:
      return undefined;
  }
}

function itemOf(stored: StoredItem): Item {
  return {
    namespace: [...stored.namespace],
    key: stored.key,
    value: stored.value,
    createdAt: new Date(stored.created_at),
    updatedAt: new Date(stored.updated_at),
  };
}
