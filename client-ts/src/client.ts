/**
 * The client of the memory service's API (v1): one method per operation of its OpenAPI schema, the
 * bodies and answers typed from it (`schema.ts`).
 *
 * Contract:
 *
 * - Every request carries `Authorization: Api-Key <key>` and speaks JSON. Answers are the API's JSON
 *   documents as the schema types them; options are the API's own field names.
 * - A service error `{"error": {"code", "message", "details"}}` is thrown as the
 *   {@link MemoryServiceError} subclass of its status (`BadRequest`, `Unauthorized`, `Forbidden`,
 *   `NotFound`, `Conflict`, `PayloadTooLarge`, `RateLimited`, `ServiceUnavailable`); no answer after
 *   the retries is `Unreachable`. A conversation id the service would refuse, and a user id, fact key
 *   or memory id that cannot be one URL path segment, throw a `TypeError` before any request; a body
 *   value JSON cannot carry (NaN, Infinity, a lone surrogate, a value containing itself) a
 *   `BadRequest` naming its field, before any request.
 * - Reads of something that may not exist yet answer an empty value instead of throwing: the window
 *   and message list of an unknown conversation are `[]`, a missing conversation, memory document,
 *   message, fact, memory or checkpoint is `undefined`, and clearing, erasing or deleting what does not
 *   exist does nothing. Only the service's own `not_found` counts: a 404 from a path the service does
 *   not know (an older deployment, a proxy) still throws.
 * - Retries: a refused or dropped connection, a timeout, a 502, 503 or 504 (not the service's
 *   `model_error`/`model_timeout`, which say the model failed, nor a 503 no retry changes, such as
 *   `chat_model_not_configured`) and a 429 whose `Retry-After` is at most `RETRY_AFTER_CAP` seconds are
 *   retried up to `retries` times, waiting `Retry-After` when the service sends one, else an
 *   exponential backoff with jitter. Every call is safe to repeat, because what a write says is fixed
 *   before the first attempt and the resend is the same request: each appended message gets its UUID
 *   `id` on the client (the service answers a resend of the same id and content with the stored
 *   message and its first `seq`), a chat turn's message its `message_id`, a checkpoint is put under its
 *   own id, writes are keyed by task and index, documents and facts are replaced by value, deletes are
 *   idempotent, and a conversation create whose resend meets `conflict` answers the conversation when
 *   it holds what was sent.
 * - Appends, checkpoint writes and store operations are sent in parts of at most `MAX_BATCH`, in order,
 *   each part one request the service stores all or nothing. A service that takes fewer items per
 *   request (its `MEMORY_MAX_BATCH`) refuses a longer part whole, storing nothing, and names its limit
 *   (`details.limit`): the client then sends that part and the rest of the batch in parts of that
 *   limit, the same items (messages with the same ids) in the same order, and its later batches too.
 *   An error names an item by its index in the caller's batch, and its `details.applied` counts the
 *   items earlier parts stored.
 * - Timeouts: each attempt is bounded by `timeout` milliseconds (an `AbortSignal.timeout`); a caller's
 *   `signal` aborts the call at once, without retries, rejecting with the signal's reason.
 */

import { isDeepStrictEqual } from "node:util";

import {
  BadRequest,
  Conflict,
  MemoryServiceError,
  Unreachable,
  errorOfStatus,
  errorWith,
  serviceError,
  type ErrorDetails,
} from "./errors.js";
import { checkQueryValue, encodeBody } from "./encoding.js";
import { checkConversationId, checkSegment, uuid4, uuid7 } from "./ids.js";
import type {
  AnswerOf,
  ApiPath,
  AppendAnswer,
  ChatAnswer,
  ChatRequest,
  Checkpoint,
  CheckpointRequest,
  CheckpointWrite,
  Context,
  ContextRequest,
  Conversation,
  ConversationDetail,
  ConversationErased,
  ConversationPage,
  Fact,
  FactHistoryPage,
  FactList,
  FactsWritten,
  HttpMethod,
  LlmWindow,
  MemoryCorrection,
  MemoryDetail,
  MemoryDocument,
  MemoryList,
  MessageIn,
  Operation,
  PathParamsOf,
  QueryOf,
  RequestBodyOf,
  FusedSearchResult,
  SearchFilters,
  SearchRequest,
  SearchResult,
  SearchStatus,
  Status,
  StoreItem,
  StorePut,
  StoreSearch,
  StoreSearchItem,
  StoredMessage,
  Summary,
  SummaryCreated,
  Usage,
  UserErased,
  UserSearchRequest,
} from "./types.js";

export const API_PREFIX = "/api/v1";
/** The most items (messages, checkpoint writes, store operations) one request carries. */
export const MAX_BATCH = 100;
/** The longest `Retry-After` waited for, in seconds; a 429 asking longer is thrown at once. */
export const RETRY_AFTER_CAP = 5;
const BACKOFF_BASE = 0.25;
const BACKOFF_CAP = 4;
/** A chat turn or a summary waits for the model: up to the service's MEMORY_CHAT_TIMEOUT (60 s by default). */
export const CHAT_TIMEOUT = 90_000;
/** 503s that no retry changes: the tenant's chat model is not configured or usable. */
const PERMANENT_UNAVAILABLE: ReadonlySet<string> = new Set([
  "chat_model_not_configured",
  "chat_model_unavailable",
  "provider_credential_missing",
]);
/** 502 and 504 answers in which the service says the model failed: asking again is the caller's choice. */
const MODEL_FAILURES: ReadonlySet<string> = new Set(["model_error", "model_timeout"]);

export interface ClientOptions {
  /** Milliseconds one attempt may take (10 s by default; chat and summarize wait at least `CHAT_TIMEOUT`). */
  timeout?: number;
  /** How many times a transient failure is retried (3 by default; 0 never retries). */
  retries?: number;
  /** The `fetch` to send with (a proxy's, a test double); the global one by default. */
  fetch?: typeof fetch;
}

/** What every method also takes. */
export interface CallOptions {
  /** Aborts the call, retries included. */
  signal?: AbortSignal;
  /** Milliseconds one attempt may take, instead of the client's. */
  timeout?: number;
}

/** Who a conversation belongs to, given on its first write. */
export interface Owners {
  user_id?: string;
  agent_id?: string;
}

// The operations' query parameters, as the schema types them.
type Query<P extends ApiPath, M extends HttpMethod> = QueryOf<Operation<P, M>>;
export type ConversationListQuery = Query<"/api/v1/conversations/", "get">;
export type MessageListQuery = Query<"/api/v1/conversations/{conversation_id}/messages/", "get">;
export type WindowQuery = Query<"/api/v1/conversations/{conversation_id}/window/", "get">;
export type CheckpointListQuery = Query<"/api/v1/conversations/{conversation_id}/checkpoints/", "get">;
export type MemoryListQuery = Query<"/api/v1/users/{user_id}/memories/", "get">;
export type NamespaceListQuery = Query<"/api/v1/store/namespaces/", "get">;
export type PageQuery = Query<"/api/v1/users/{user_id}/facts/history/", "get">;
export type UsageQuery = Query<"/api/v1/usage/", "get">;
/** A search's options besides its query: the ranking's (`mode`, `top_k`...) and the filters. */
export type SearchOptions = Omit<SearchRequest, "q">;
export type UserSearchOptions = Omit<SearchOptions, "scope" | "cross_session_trigger">;
/** The user search's options with memories: its own, and whether memories taken back count too. */
export type UserSearchWithMemoriesOptions = UserSearchOptions & Pick<UserSearchRequest, "include_past_memories">;

/** One LangGraph store operation of {@link MemoryClient.storeBatch}, in the service's JSON. */
export type StoreOperation =
  | { op: "get"; namespace: string[]; key: string; refresh_ttl?: boolean }
  | {
      op: "search";
      namespace_prefix: string[];
      query?: string | null;
      filter?: Record<string, unknown> | null;
      limit?: number;
      offset?: number;
      refresh_ttl?: boolean;
    }
  | { op: "put"; namespace: string[]; key: string; value: Record<string, unknown>; index?: false | string[] | null; ttl?: number | null }
  | { op: "delete"; namespace: string[]; key: string }
  | {
      op: "list_namespaces";
      match_conditions?: Array<{ match_type: "prefix" | "suffix"; path: string[] }>;
      max_depth?: number | null;
      limit?: number;
      offset?: number;
    };

/** One event of a streamed chat turn: `start`, a `token` per piece of the answer, then `done` (the chat answer) or `error`. */
export type ChatEvent =
  | { event: "start"; data: Record<string, unknown> }
  | { event: "token"; data: { text: string } }
  | { event: "done"; data: ChatAnswer }
  | { event: "error"; data: { error: { code: string; message: string; details?: ErrorDetails } } };

/** A request, built and encoded before its first attempt; `T` is what it answers. */
interface Prepared<T> {
  readonly method: Uppercase<HttpMethod>;
  readonly url: string;
  readonly body: string | undefined;
  readonly timeout: number | undefined;
  /** Whether a `conflict` answering a resend may be the first attempt's own write. */
  readonly conflictMayBeOurs: boolean;
  readonly answer?: T; // a phantom: the type of the answer
}

interface Answered {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly text: string;
  readonly body: unknown;
}

type Parts<O> = {
  path?: PathParamsOf<O>;
  query?: QueryOf<O>;
  body?: RequestBodyOf<O>;
};

const MISSING: unique symbol = Symbol("missing");
const OURS_PERHAPS: unique symbol = Symbol("ours perhaps");

/** A client of one memory service deployment, authenticated as one tenant by its API key. */
export class MemoryClient {
  readonly baseUrl: string;
  readonly timeout: number;
  readonly retries: number;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;
  /** Message ids are made UUIDv7 until the service finds this machine's clock ahead of its own. */
  #stampedIds = true;
  /** Items per request of a batch: `MAX_BATCH`, or the service's own limit once it refused more. */
  #batchSize = MAX_BATCH;
  /** Items per page of a list the integrations page through (checkpoints, store reads): the service's limit once it refused more. */
  #pageLimit: number | undefined;

  constructor(baseUrl: string, apiKey: string, options: ClientOptions = {}) {
    if (!baseUrl) throw new TypeError("baseUrl is required, e.g. http://127.0.0.1:8000");
    if (!apiKey) throw new TypeError("apiKey is required (python manage.py create_api_key --tenant <slug>).");
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.timeout = options.timeout ?? 10_000;
    this.retries = Math.max(0, options.retries ?? 3);
    this.#headers = { Authorization: `Api-Key ${apiKey}`, Accept: "application/json" };
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  // --- messages ------------------------------------------------------------------------------------

  /**
   * Append messages in order; the conversation is created on first write. Answers the stored
   * messages, with `id` and `seq`.
   *
   * Every message gets its id before the first request (a UUIDv7 unless given), so calling again with
   * the same messages, or a retry after a lost answer, stores each once. Sent in parts of at most `MAX_BATCH`
   * (fewer if the service takes fewer per request),
   * each stored all or nothing. A service that finds this machine's clock too far ahead refuses the
   * UUIDv7s with nothing stored (`clock_skew`): the client then makes UUIDv4 ids, for this call and
   * every later one, and sends again.
   */
  async append(conversationId: string, messages: readonly MessageIn[], options: Owners & CallOptions = {}): Promise<StoredMessage[]> {
    try {
      return await this.#append(conversationId, messages, options, this.#stampedIds);
    } catch (error) {
      if (!(error instanceof BadRequest) || !this.#unstamp(error, messages)) throw error;
      return await this.#append(conversationId, messages, options, false);
    }
  }

  /** Append one message (see {@link append}); answers it as stored. */
  async appendMessage(conversationId: string, message: MessageIn, options: Owners & CallOptions = {}): Promise<StoredMessage> {
    const [stored] = await this.append(conversationId, [message], options);
    return stored!;
  }

  async #append(
    conversationId: string,
    messages: readonly MessageIn[],
    options: Owners & CallOptions,
    stamped: boolean,
  ): Promise<StoredMessage[]> {
    const identified = messages.map((message) => ({ ...message, id: message.id ?? (stamped ? uuid7() : uuid4()) }));
    const owners = { user_id: options.user_id ?? "", agent_id: options.agent_id ?? "" };
    const batch = new Batch("messages", identified, (items) =>
      this.#prepare("post", "/api/v1/conversations/{conversation_id}/messages/", {
        path: { conversation_id: conversationId },
        body: { messages: items, ...owners },
      }),
    );
    const answers: AppendAnswer[] = await this.#sendBatch(batch, options);
    return answers.flatMap((answer) => answer.messages);
  }

  /** Whether `error` refused, before anything was stored, a UUIDv7 this client made: its clock is ahead of the service's. */
  #unstamp(error: BadRequest, messages: readonly MessageIn[]): boolean {
    const given = new Set(messages.flatMap((message) => (message.id ? [String(message.id)] : [])));
    if (error.code !== "clock_skew" || error.details["applied"] !== 0 || given.has(String(error.details["id"]))) return false;
    this.#stampedIds = false;
    return true;
  }

  /**
   * The stored messages as the service keeps them, oldest first: the newest `limit` after skipping the
   * newest `skip`, of one `role`, between `start_date` and `end_date`; `[]` when the conversation is unknown.
   */
  async messages(conversationId: string, query: MessageListQuery = {}, options: CallOptions = {}): Promise<StoredMessage[]> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/messages/", {
      path: { conversation_id: conversationId },
      query,
    });
    return (await this.#find(request, options))?.messages ?? [];
  }

  /** The newest messages (the tenant's window unless `limit`), oldest first, in `format` `"openai"` or `"langchain"`; `[]` when unknown. */
  async window(conversationId: string, query: WindowQuery = {}, options: CallOptions = {}): Promise<LlmWindow["messages"]> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/window/", {
      path: { conversation_id: conversationId },
      query,
    });
    return (await this.#find(request, options))?.messages ?? [];
  }

  /** One stored message by its id; `undefined` when the conversation or the message does not exist. */
  async getMessage(conversationId: string, messageId: string, options: CallOptions = {}): Promise<StoredMessage | undefined> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/messages/{message_id}/", {
      path: { conversation_id: conversationId, message_id: messageId },
    });
    return await this.#find(request, options);
  }

  /** Remove the conversation's messages (its memory document and checkpoints stay); nothing when unknown. */
  async clear(conversationId: string, options: CallOptions = {}): Promise<void> {
    const request = this.#prepare("delete", "/api/v1/conversations/{conversation_id}/messages/", {
      path: { conversation_id: conversationId },
    });
    await this.#find(request, options);
  }

  /**
   * The messages to send the model next, within `max_tokens`: the system prompt (with the summary of
   * older turns), recent turns in full, then `query`; with the figures behind them. Each option left
   * out is the tenant's setting. An unknown conversation is `NotFound`.
   */
  async context(conversationId: string, body: ContextRequest = {}, options: CallOptions = {}): Promise<Context> {
    const request = this.#prepare("post", "/api/v1/conversations/{conversation_id}/context/", {
      path: { conversation_id: conversationId },
      body,
    });
    return await this.#send(request, options);
  }

  // --- conversations -------------------------------------------------------------------------------

  /** One page of the tenant's conversations (of one user or agent, archived or not), with the `count` of all. */
  async listConversations(query: ConversationListQuery = {}, options: CallOptions = {}): Promise<ConversationPage> {
    return await this.#send(this.#prepare("get", "/api/v1/conversations/", { query }), options);
  }

  /**
   * Create an empty conversation (appending creates one too). `Conflict` when it exists, unless the
   * conflict answers a resend and the conversation holds what was sent.
   */
  async createConversation(
    conversationId: string,
    fields: Owners & { metadata?: Record<string, unknown> } = {},
    options: CallOptions = {},
  ): Promise<Conversation> {
    const body = {
      conversation_id: checkConversationId(conversationId),
      user_id: fields.user_id ?? "",
      agent_id: fields.agent_id ?? "",
      metadata: fields.metadata ?? {},
    };
    const request = this.#prepare("post", "/api/v1/conversations/", { body }, { conflictMayBeOurs: true });
    const answer = await this.#call(request, options, false);
    if (answer !== OURS_PERHAPS && answer !== MISSING) return answer;
    const found = await this.getConversation(conversationId, options);
    const ours =
      found !== undefined &&
      found.user_id === body.user_id &&
      found.agent_id === body.agent_id &&
      isDeepStrictEqual(found.metadata, body.metadata);
    if (!ours) throw new Conflict(409, "conflict", `Conversation ${conversationId} already exists.`);
    return found;
  }

  /** The conversation's owners, metadata, figures and search coverage; `undefined` when it does not exist. */
  async getConversation(conversationId: string, options: CallOptions = {}): Promise<ConversationDetail | undefined> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/", { path: { conversation_id: conversationId } });
    return await this.#find(request, options);
  }

  /** Change the given fields (`metadata` is replaced whole); `NotFound` when the conversation does not exist. */
  async updateConversation(
    conversationId: string,
    changes: RequestBodyOf<Operation<"/api/v1/conversations/{conversation_id}/", "patch">>,
    options: CallOptions = {},
  ): Promise<Conversation> {
    if (Object.values(changes).every((value) => value === undefined)) {
      throw new TypeError("Nothing to change: give user_id, agent_id, archived or metadata.");
    }
    const request = this.#prepare("patch", "/api/v1/conversations/{conversation_id}/", {
      path: { conversation_id: conversationId },
      body: changes,
    });
    return await this.#send(request, options);
  }

  /**
   * Erase the conversation everywhere: messages, memory document, vectors, summaries, checkpoints,
   * cache keys and writes still queued. Answers what was erased (zeros when it does not exist).
   */
  async eraseConversation(conversationId: string, options: CallOptions = {}): Promise<ConversationErased> {
    const request = this.#prepare("delete", "/api/v1/conversations/{conversation_id}/", {
      path: { conversation_id: conversationId },
    });
    return (await this.#find(request, options)) ?? { conversation_id: conversationId, messages_erased: 0, cache_keys_erased: 0 };
  }

  // --- the memory document -------------------------------------------------------------------------

  /** The conversation's memory document (the agent's own `messages` and `metadata`); `undefined` when unknown. */
  async getMemory(conversationId: string, options: CallOptions = {}): Promise<MemoryDocument | undefined> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/memory/", {
      path: { conversation_id: conversationId },
    });
    return await this.#find(request, options);
  }

  /** Replace the memory document (the conversation is created if needed); answers it as saved. */
  async putMemory(conversationId: string, document: MemoryDocument, options: CallOptions = {}): Promise<MemoryDocument> {
    const request = this.#prepare("put", "/api/v1/conversations/{conversation_id}/memory/", {
      path: { conversation_id: conversationId },
      body: { messages: document.messages ?? [], metadata: document.metadata ?? {} },
    });
    return await this.#send(request, options);
  }

  // --- search and summaries ------------------------------------------------------------------------

  /**
   * The conversation's messages most relevant to `query`, best first (hybrid semantic and keyword
   * search unless `mode` says otherwise); with `scope` `"auto"` also the user's other conversations
   * while this one is short. Filters (dates, roles, names, agent ids, conversation ids, metadata)
   * narrow what is ranked; a filtered search is sent as a POST.
   */
  async search(conversationId: string, query: string, search: SearchOptions = {}, options: CallOptions = {}): Promise<SearchResult> {
    const path = { conversation_id: conversationId };
    const [filters, ranking] = splitFilters(search);
    const request = filters
      ? this.#prepare("post", "/api/v1/conversations/{conversation_id}/search/", { path, body: { ...search, q: query } })
      : this.#prepare("get", "/api/v1/conversations/{conversation_id}/search/", { path, query: { ...ranking, q: query } });
    return await this.#send(request, options);
  }

  /** The messages of every conversation of the user most relevant to `query`, best first. */
  async searchUser(userId: string, query: string, search: UserSearchOptions = {}, options: CallOptions = {}): Promise<SearchResult> {
    // Without include_memories the service answers the turns' search alone.
    return (await this.#searchUser(userId, { ...search, q: query }, options)) as SearchResult;
  }

  /**
   * The user search with the user's extracted memories ranked beside the turns, in one list best
   * first: each result's `kind` is `"turn"` (a message hit, with the ids of the memories read from it)
   * or `"memory"` (with the ids of the messages it was read from). Current memories only unless
   * `include_past_memories`. The filters narrow the turns; `conversation_id` narrows the memories too.
   */
  async searchUserWithMemories(
    userId: string,
    query: string,
    search: UserSearchWithMemoriesOptions = {},
    options: CallOptions = {},
  ): Promise<FusedSearchResult> {
    return (await this.#searchUser(userId, { ...search, q: query, include_memories: true }, options)) as FusedSearchResult;
  }

  #searchUser(userId: string, search: UserSearchRequest, options: CallOptions) {
    const path = { user_id: userId };
    const [filters, ranking] = splitFilters(search);
    const request = filters
      ? this.#prepare("post", "/api/v1/users/{user_id}/search/", { path, body: search })
      : this.#prepare("get", "/api/v1/users/{user_id}/search/", { path, query: ranking });
    return this.#send(request, options);
  }

  /** Whether search covers the user's history yet (`searchable`), and what is still waiting. */
  async searchStatus(userId: string, options: CallOptions = {}): Promise<SearchStatus> {
    return await this.#send(this.#prepare("get", "/api/v1/users/{user_id}/search/status/", { path: { user_id: userId } }), options);
  }

  /** The conversation's summaries, newest first; `[]` when unknown. */
  async summaries(conversationId: string, query: { limit?: number } = {}, options: CallOptions = {}): Promise<Summary[]> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/summaries/", {
      path: { conversation_id: conversationId },
      query,
    });
    return (await this.#find(request, options))?.summaries ?? [];
  }

  /**
   * Summarise the conversation's latest persisted messages now (or answer the summary already filed).
   * `Conflict` when no message is persisted yet, `NotFound` when the conversation does not exist.
   */
  async summarize(conversationId: string, options: CallOptions = {}): Promise<SummaryCreated> {
    const request = this.#prepare(
      "post",
      "/api/v1/conversations/{conversation_id}/summaries/",
      { path: { conversation_id: conversationId } },
      { timeout: Math.max(this.timeout, CHAT_TIMEOUT) },
    );
    return await this.#send(request, options);
  }

  // --- the agent loop ------------------------------------------------------------------------------

  /**
   * One turn of the service's agent loop: it stores `content`, builds the context, asks the tenant's
   * chat model, stores and answers both messages. The message gets its `message_id` before the first
   * attempt: a retried call stores it once and asks the model once. A failed model is a
   * `MemoryServiceError` with `code` `"model_error"` (502) or `"model_timeout"` (504).
   */
  async chat(
    conversationId: string,
    content: string,
    turn: Omit<ChatRequest, "content" | "stream"> = {},
    options: CallOptions = {},
  ): Promise<ChatAnswer> {
    const request = this.#prepare(
      "post",
      "/api/v1/conversations/{conversation_id}/chat/",
      { path: { conversation_id: conversationId }, body: { message_id: uuid4(), ...turn, content, stream: false } },
      { timeout: Math.max(this.timeout, CHAT_TIMEOUT) },
    );
    return (await this.#send(request, options)) as ChatAnswer;
  }

  /**
   * The same turn as it streams (server-sent events). Not retried once the stream has begun; leaving
   * the loop early closes the connection, which stops the model, and no answer is stored.
   */
  async *chatStream(
    conversationId: string,
    content: string,
    turn: Omit<ChatRequest, "content" | "stream"> = {},
    options: CallOptions = {},
  ): AsyncGenerator<ChatEvent> {
    const request = this.#prepare("post", "/api/v1/conversations/{conversation_id}/chat/", {
      path: { conversation_id: conversationId },
      body: { message_id: uuid4(), ...turn, content, stream: true },
    });
    const controller = new AbortController();
    const signals = [controller.signal, ...(options.signal ? [options.signal] : [])];
    const response = await this.#fetch(request.url, {
      method: request.method,
      headers: { ...this.#headers, "Content-Type": "application/json", Accept: "text/event-stream" },
      body: request.body,
      signal: AbortSignal.any(signals),
    });
    try {
      if (!response.ok || response.body === null) {
        const text = await response.text();
        throw errorOf({ status: response.status, statusText: response.statusText, headers: response.headers, text, body: parseJson(text) });
      }
      let event = "message";
      let pending = "";
      const decoder = new TextDecoder();
      for await (const chunk of response.body) {
        pending += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline: number;
        while ((newline = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, newline).replace(/\r$/, "");
          pending = pending.slice(newline + 1);
          if (line.startsWith("event: ")) event = line.slice("event: ".length);
          else if (line.startsWith("data: ")) yield { event, data: JSON.parse(line.slice("data: ".length)) } as ChatEvent;
        }
      }
    } finally {
      controller.abort();
    }
  }

  // --- extracted memories --------------------------------------------------------------------------

  /**
   * The memories the service extracted from the user's conversations: the current ones, newest change
   * first, or with `query` the best matches with their `score`; `extraction` says whether the tenant
   * extracts at all, and if not why.
   */
  async listMemories(userId: string, query: MemoryListQuery = {}, options: CallOptions = {}): Promise<MemoryList> {
    return await this.#send(this.#prepare("get", "/api/v1/users/{user_id}/memories/", { path: { user_id: userId }, query }), options);
  }

  /** One extracted memory with its `history`; `undefined` when the user has none of this id. */
  async getUserMemory(userId: string, memoryId: string, options: CallOptions = {}): Promise<MemoryDetail | undefined> {
    const request = this.#prepare("get", "/api/v1/users/{user_id}/memories/{memory_id}/", {
      path: { user_id: userId, memory_id: memoryId },
    });
    return await this.#find(request, options);
  }

  /** Correct a memory by hand (the version replaced stays in its history); `valid_to: null` makes it current again. */
  async correctMemory(userId: string, memoryId: string, changes: MemoryCorrection, options: CallOptions = {}): Promise<MemoryDetail> {
    if (Object.values(changes).every((value) => value === undefined)) {
      throw new TypeError("Nothing to correct: give kind, subject, text, valid_from, valid_to or confidence.");
    }
    const request = this.#prepare("patch", "/api/v1/users/{user_id}/memories/{memory_id}/", {
      path: { user_id: userId, memory_id: memoryId },
      body: changes,
    });
    return await this.#send(request, options);
  }

  /** Take a memory back: it stops being current and keeps its history. Nothing when there is none. */
  async deleteMemory(userId: string, memoryId: string, options: CallOptions = {}): Promise<void> {
    const request = this.#prepare("delete", "/api/v1/users/{user_id}/memories/{memory_id}/", {
      path: { user_id: userId, memory_id: memoryId },
    });
    await this.#find(request, options);
  }

  // --- facts and users -----------------------------------------------------------------------------

  /** The user's facts, most recently updated first, with their tokens. */
  async listFacts(userId: string, query: { limit?: number } = {}, options: CallOptions = {}): Promise<FactList> {
    return await this.#send(this.#prepare("get", "/api/v1/users/{user_id}/facts/", { path: { user_id: userId }, query }), options);
  }

  /** One fact of the user; `undefined` when there is none with this key. */
  async getFact(userId: string, key: string, options: CallOptions = {}): Promise<Fact | undefined> {
    const request = this.#prepare("get", "/api/v1/users/{user_id}/facts/{key}/", { path: { user_id: userId, key: factKey(key) } });
    return await this.#find(request, options);
  }

  /** Set one fact (a changed value goes to its history; the same value changes nothing). */
  async setFact(userId: string, key: string, value: string, options: CallOptions = {}): Promise<Fact> {
    const request = this.#prepare("put", "/api/v1/users/{user_id}/facts/{key}/", {
      path: { user_id: userId, key: factKey(key) },
      body: { value },
    });
    return await this.#send(request, options);
  }

  /** Set several facts, all or none; `created` lists the keys this call created. */
  async setFacts(userId: string, facts: Record<string, string>, options: CallOptions = {}): Promise<FactsWritten> {
    const request = this.#prepare("post", "/api/v1/users/{user_id}/facts/", { path: { user_id: userId }, body: { facts } });
    return await this.#send(request, options);
  }

  /** Delete a fact (its history keeps the value); nothing when there is none. */
  async deleteFact(userId: string, key: string, options: CallOptions = {}): Promise<void> {
    const request = this.#prepare("delete", "/api/v1/users/{user_id}/facts/{key}/", { path: { user_id: userId, key: factKey(key) } });
    await this.#find(request, options);
  }

  /** One page of the changes of one key, newest first; an empty page when the key never existed. */
  async factHistory(userId: string, key: string, query: PageQuery = {}, options: CallOptions = {}): Promise<FactHistoryPage> {
    const request = this.#prepare("get", "/api/v1/users/{user_id}/facts/{key}/history/", {
      path: { user_id: userId, key: factKey(key) },
      query,
    });
    return (await this.#find(request, options)) ?? emptyPage();
  }

  /** One page of every change of the user's facts, newest first. */
  async userFactHistory(userId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<FactHistoryPage> {
    const request = this.#prepare("get", "/api/v1/users/{user_id}/facts/history/", { path: { user_id: userId }, query });
    return (await this.#find(request, options)) ?? emptyPage();
  }

  /** Erase the user everywhere: conversations, facts and their history, memories, cache keys. Answers the counts. */
  async eraseUser(userId: string, options: CallOptions = {}): Promise<UserErased> {
    return await this.#send(this.#prepare("delete", "/api/v1/users/{user_id}/", { path: { user_id: userId } }), options);
  }

  // --- checkpoints ---------------------------------------------------------------------------------

  /** Store a checkpoint (the same id replaces it); answers it as stored. */
  async putCheckpoint(conversationId: string, checkpoint: CheckpointRequest, options: CallOptions = {}): Promise<Checkpoint> {
    const request = this.#prepare("post", "/api/v1/conversations/{conversation_id}/checkpoints/", {
      path: { conversation_id: conversationId },
      body: { namespace: "", parent_id: null, metadata: {}, ...checkpoint },
    });
    return await this.#send(request, options);
  }

  /** Checkpoints newest first, of one namespace (every namespace when none is given), older than `before`; `[]` when unknown. */
  async listCheckpoints(conversationId: string, query: CheckpointListQuery = {}, options: CallOptions = {}): Promise<Checkpoint[]> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/checkpoints/", {
      path: { conversation_id: conversationId },
      query,
    });
    return (await this.#find(request, options))?.checkpoints ?? [];
  }

  /** The newest checkpoint of the namespace, with its writes; `undefined` when there is none. */
  async latestCheckpoint(conversationId: string, query: { namespace?: string } = {}, options: CallOptions = {}): Promise<Checkpoint | undefined> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/checkpoints/latest/", {
      path: { conversation_id: conversationId },
      query: { namespace: query.namespace ?? "" },
    });
    return await this.#find(request, options);
  }

  /** One checkpoint with its writes; `undefined` when it does not exist (or was retired). */
  async getCheckpoint(
    conversationId: string,
    checkpointId: string,
    query: { namespace?: string } = {},
    options: CallOptions = {},
  ): Promise<Checkpoint | undefined> {
    const request = this.#prepare("get", "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/", {
      path: { conversation_id: conversationId, checkpoint_id: checkpointId },
      query: { namespace: query.namespace ?? "" },
    });
    return await this.#find(request, options);
  }

  /**
   * Store a task's pending writes (`idx`, `channel`, `value`) on a checkpoint: for an `idx` >= 0 the
   * first write wins, a negative `idx` (errors, interrupts) is replaced. Sent in parts of at most
   * `MAX_BATCH` (fewer if the service takes fewer per request).
   */
  async putWrites(
    conversationId: string,
    checkpointId: string,
    task: { task_id: string; writes: readonly CheckpointWrite[]; namespace?: string; task_path?: string },
    options: CallOptions = {},
  ): Promise<void> {
    const batch = new Batch("writes", task.writes, (items) =>
      this.#prepare("post", "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/writes/", {
        path: { conversation_id: conversationId, checkpoint_id: checkpointId },
        body: { namespace: task.namespace ?? "", task_id: task.task_id, task_path: task.task_path ?? "", writes: items },
      }),
    );
    await this.#sendBatch(batch, options);
  }

  /** Delete the checkpoints (and their writes) of a namespace, or of all when none is given. */
  async deleteCheckpoints(conversationId: string, query: { namespace?: string } = {}, options: CallOptions = {}): Promise<void> {
    const request = this.#prepare("delete", "/api/v1/conversations/{conversation_id}/checkpoints/", {
      path: { conversation_id: conversationId },
      query,
    });
    await this.#find(request, options);
  }

  // --- the LangGraph store -------------------------------------------------------------------------

  /**
   * Run store operations in order; one result per operation, a later one seeing an earlier one's
   * write. Up to `MAX_BATCH` operations (and at most the service's `MEMORY_MAX_BATCH`) are one request
   * and one transaction of the service; a longer
   * batch is sent in parts, each its own transaction.
   */
  async storeBatch(operations: readonly StoreOperation[], options: CallOptions = {}): Promise<unknown[]> {
    const batch = new Batch("operations", operations, (items) =>
      this.#prepare("post", "/api/v1/store/batch/", { body: { operations: items as Array<Record<string, unknown>> } }),
    );
    const answers = await this.#sendBatch(batch, options);
    return answers.flatMap((answer) => answer.results);
  }

  /** One item of the store; `undefined` when there is none. */
  async getStoreItem(
    namespace: readonly string[],
    key: string,
    query: { refresh_ttl?: boolean } = {},
    options: CallOptions = {},
  ): Promise<StoreItem | undefined> {
    const request = this.#prepare("get", "/api/v1/store/items/", { query: { namespace: [...namespace], key, ...query } });
    return await this.#find(request, options);
  }

  /** Create or replace an item (`ttl` in minutes; `index` the fields a query searches, or `false`); answers it as stored. */
  async putStoreItem(item: StorePut, options: CallOptions = {}): Promise<StoreItem> {
    return await this.#send(this.#prepare("put", "/api/v1/store/items/", { body: item }), options);
  }

  /** Delete an item; nothing when there is none. */
  async deleteStoreItem(namespace: readonly string[], key: string, options: CallOptions = {}): Promise<void> {
    await this.#find(this.#prepare("delete", "/api/v1/store/items/", { query: { namespace: [...namespace], key } }), options);
  }

  /** Items under a namespace prefix that pass the filter: ranked by hybrid search with a `query`, else in the order written. */
  async searchStore(search: StoreSearch, options: CallOptions = {}): Promise<StoreSearchItem[]> {
    return (await this.#send(this.#prepare("post", "/api/v1/store/search/", { body: search }), options)).items;
  }

  /** The namespaces holding items, sorted, cut to `max_depth` labels. */
  async listStoreNamespaces(query: NamespaceListQuery = {}, options: CallOptions = {}): Promise<string[][]> {
    return (await this.#send(this.#prepare("get", "/api/v1/store/namespaces/", { query }), options)).namespaces;
  }

  // --- the service ---------------------------------------------------------------------------------

  /** Whether the service's database, cache and broker answer, with the tenant's queue and cache figures. */
  async status(options: CallOptions = {}): Promise<Status> {
    return await this.#send(this.#prepare("get", "/api/v1/status/", {}), options);
  }

  /** The tenant's usage per day over the last `days` (newest first), with the totals. */
  async usage(query: UsageQuery = {}, options: CallOptions = {}): Promise<Usage> {
    return await this.#send(this.#prepare("get", "/api/v1/usage/", { query }), options);
  }

  /** What the API offers: its version and addresses (the one endpoint that needs no key; not in the schema). */
  async apiRoot(options: CallOptions = {}): Promise<Record<string, unknown>> {
    const request: Prepared<Record<string, unknown>> = {
      method: "GET",
      url: `${this.baseUrl}${API_PREFIX}/`,
      body: undefined,
      timeout: undefined,
      conflictMayBeOurs: false,
    };
    return await this.#send(request, options);
  }

  // --- sending -------------------------------------------------------------------------------------

  /** The request of an operation of the schema, its path parameters checked and its body encoded. */
  #prepare<P extends ApiPath, M extends HttpMethod>(
    method: M,
    path: P,
    parts: Parts<Operation<P, M>>,
    extra: { timeout?: number; conflictMayBeOurs?: boolean } = {},
  ): Prepared<AnswerOf<Operation<P, M>>> {
    const pathParams = (parts.path ?? {}) as Record<string, string>;
    const address = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(checkPathParam(name, pathParams[name]!)));
    const search = queryString((parts.query ?? {}) as Record<string, unknown>);
    return {
      method: method.toUpperCase() as Uppercase<M>,
      url: `${this.baseUrl}${address}${search}`,
      body: parts.body === undefined ? undefined : encodeBody(parts.body),
      timeout: extra.timeout,
      conflictMayBeOurs: extra.conflictMayBeOurs ?? false,
    };
  }

  /** The answer; throws the service's error. */
  async #send<T>(request: Prepared<T>, options: CallOptions): Promise<T> {
    return (await this.#call(request, options, false)) as T;
  }

  /** The answer, or `undefined` when the service answers `not_found`. */
  async #find<T>(request: Prepared<T>, options: CallOptions): Promise<T | undefined> {
    const answer = await this.#call(request, options, true);
    return answer === MISSING ? undefined : (answer as T);
  }

  async #call<T>(request: Prepared<T>, options: CallOptions, missingOk: boolean): Promise<T | typeof MISSING | typeof OURS_PERHAPS> {
    for (let attempt = 0; ; attempt++) {
      let delay: number | null;
      try {
        const answered = await this.#attempt(request, options);
        delay = this.#retryDelay(attempt, answered);
        if (delay === null) return finish(request, answered, { missingOk, resent: attempt > 0 });
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (error instanceof MemoryServiceError) throw error;
        if (attempt >= this.retries) {
          throw new Unreachable(
            null,
            "unreachable",
            `${this.baseUrl} did not answer after ${attempt + 1} attempts: ${describe(error)}`,
            {},
            null,
            { cause: error },
          );
        }
        delay = backoff(attempt);
      }
      await sleep(delay, options.signal);
    }
  }

  async #attempt(request: Prepared<unknown>, options: CallOptions): Promise<Answered> {
    const timeout = options.timeout ?? request.timeout ?? this.timeout;
    const signals = [AbortSignal.timeout(timeout), ...(options.signal ? [options.signal] : [])];
    const headers = request.body === undefined ? this.#headers : { ...this.#headers, "Content-Type": "application/json" };
    const response = await this.#fetch(request.url, {
      method: request.method,
      headers,
      body: request.body,
      signal: AbortSignal.any(signals),
    });
    const text = await response.text();
    return { status: response.status, statusText: response.statusText, headers: response.headers, text, body: parseJson(text) };
  }

  /** Seconds to wait before the next attempt; `null` when the answer is final. Throws when no retry is left. */
  #retryDelay(attempt: number, answered: Answered): number | null {
    const code = serviceError(answered.body)?.code;
    const retryAfter = retryAfterSeconds(answered.headers);
    const retryable =
      (answered.status === 503 && !PERMANENT_UNAVAILABLE.has(code ?? "")) ||
      ((answered.status === 502 || answered.status === 504) && !MODEL_FAILURES.has(code ?? "")) ||
      (answered.status === 429 && retryAfter !== null && retryAfter <= RETRY_AFTER_CAP);
    if (!retryable) return null;
    if (attempt >= this.retries) throw errorOf(answered);
    return retryAfter === null ? backoff(attempt) : Math.min(retryAfter, RETRY_AFTER_CAP);
  }

  /** The items to ask for in one page when `wanted`: at most the service's page limit once known. */
  pageSize(wanted: number): number {
    return this.#pageLimit === undefined ? wanted : Math.min(wanted, this.#pageLimit);
  }

  /**
   * Whether `error` is the service's refusal of a page of `asked` items (`field` its `limit`) as more
   * than it answers at once (its `MEMORY_MAX_PAGE_SIZE`, named in `details.limit`); then this client
   * asks its later pages in that size. Such a refusal answers and stores nothing, so the page can be
   * asked again.
   */
  learnPageLimit(error: unknown, field: string, asked: number): boolean {
    const limit = error instanceof MemoryServiceError ? serviceLimit(error, field, asked) : null;
    if (limit !== null) this.#pageLimit = limit;
    return limit !== null;
  }

  /**
   * The answers to the parts of a batch, sent in order. A refusal of a part as more items than the
   * service takes in one request stored nothing: the rest of the batch, that part included, is sent in
   * parts of the limit it named, and this client's later batches use that size too. Any other error
   * names the item by its index in the whole batch and counts the items earlier parts stored.
   */
  async #sendBatch<I, T>(batch: Batch<I, T>, options: CallOptions): Promise<T[]> {
    const answers: T[] = [];
    let parts = batch.parts(this.#batchSize);
    while (parts.length > 0) {
      const [start, count, request] = parts.shift()!;
      try {
        answers.push(await this.#send(request, options));
      } catch (error) {
        if (!(error instanceof MemoryServiceError)) throw error;
        const limit = serviceLimit(error, batch.name, count);
        if (limit === null) throw inBatch(error, batch.name, start, start);
        this.#batchSize = limit;
        parts = batch.parts(limit, start);
      }
    }
    return answers;
  }
}

// --- helpers ----------------------------------------------------------------------------------------

function finish<T>(
  request: Prepared<T>,
  answered: Answered,
  { missingOk, resent }: { missingOk: boolean; resent: boolean },
): T | typeof MISSING | typeof OURS_PERHAPS {
  if (answered.status >= 200 && answered.status < 300) return answered.body as T;
  const error = errorOf(answered);
  if (resent && request.conflictMayBeOurs && answered.status === 409 && error.code === "conflict") return OURS_PERHAPS;
  if (missingOk && answered.status === 404 && error.code === "not_found") return MISSING;
  throw error;
}

function errorOf(answered: Answered): MemoryServiceError {
  const retryAfter = retryAfterSeconds(answered.headers);
  const found = serviceError(answered.body);
  if (found !== null) return errorOfStatus(answered.status, found.code, found.message, found.details, retryAfter);
  const message = answered.text ? `${answered.statusText}: ${answered.text.slice(0, 200)}` : answered.statusText;
  return errorOfStatus(answered.status, `http_${answered.status}`, message, {}, retryAfter);
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The wait `Retry-After` asks for, in seconds (either of its forms); `null` without one. */
function retryAfterSeconds(headers: Headers): number | null {
  const value = headers.get("Retry-After");
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(seconds, 0);
  const moment = Date.parse(value);
  return Number.isNaN(moment) ? null : Math.max((moment - Date.now()) / 1000, 0);
}

function backoff(attempt: number): number {
  return Math.min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt) * (0.5 + Math.random() / 2);
}

function sleep(seconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, seconds * 1000);
    const aborted = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.name}: ${error.message}${cause}`;
  }
  return String(error);
}

const SEGMENT_NAMES: Readonly<Record<string, string>> = {
  user_id: "user id",
  key: "fact key",
  memory_id: "memory id",
  message_id: "message id",
  checkpoint_id: "checkpoint id",
};

function checkPathParam(name: string, value: string): string {
  if (name === "conversation_id") return checkConversationId(value);
  return checkSegment(value, SEGMENT_NAMES[name] ?? name);
}

function factKey(key: string): string {
  if (typeof key === "string" && key.trim() === "history") {
    throw new TypeError('The fact key "history" is reserved by the service (it names a path of the API).');
  }
  return key;
}

/** Query parameters: `undefined` left out, a list as the parameter repeated, booleans and dates as the service reads them. */
function queryString(query: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === undefined || item === null) continue;
      const text = item instanceof Date ? item.toISOString() : String(item);
      checkQueryValue(name, text);
      search.append(name, text);
    }
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** Whether a search has filters (which only a POST carries whole), and its other options. */
function splitFilters<S extends SearchOptions>(search: S): [boolean, Omit<S, keyof SearchFilters>] {
  const { start_date, end_date, role, name, agent_id, conversation_id, metadata, ...ranking } = search;
  const filters = [start_date, end_date, role, name, agent_id, conversation_id, metadata].some((value) => value !== undefined);
  return [filters, ranking];
}

function emptyPage(): FactHistoryPage {
  return { count: 0, next: null, previous: null, results: [] };
}

/** A batch of `items`, the body's list `name`, sent in parts of consecutive items, in order; `requestOf` makes the request of one part. */
class Batch<I, T> {
  constructor(
    readonly name: string,
    readonly items: readonly I[],
    readonly requestOf: (items: I[]) => Prepared<T>,
  ) {}

  /**
   * The requests of the items from `start` on, one per part of at most `size`, each with the index of
   * its first item and its number of items. Every part is built, hence encoded, before any is sent: a
   * value no request can carry is refused naming its index in `items`, and nothing is written.
   */
  parts(size: number, start = 0): Array<readonly [number, number, Prepared<T>]> {
    const parts: Array<readonly [number, number, Prepared<T>]> = [];
    for (let first = start; first < this.items.length; first += size) {
      const items = this.items.slice(first, first + size);
      try {
        parts.push([first, items.length, this.requestOf(items)]);
      } catch (error) {
        if (error instanceof MemoryServiceError) throw inBatch(error, this.name, first, 0);
        throw error;
      }
    }
    return parts;
  }
}

/**
 * The most items the service takes in one request (its `MEMORY_MAX_BATCH`, `field` the batch's list)
 * or answers in one page (its `MEMORY_MAX_PAGE_SIZE`, `field` the page's `limit`), when `error` is its
 * refusal of `asked` items as more than that (`limit_exceeded` naming `field` and the limit); `null`
 * for any other error. Such a refusal stores and answers nothing.
 */
function serviceLimit(error: MemoryServiceError, field: string, asked: number): number | null {
  const limit = error.details["limit"];
  if (error.code !== "limit_exceeded" || error.details["field"] !== field || !Number.isInteger(limit)) return null;
  return (limit as number) > 0 && (limit as number) < asked ? (limit as number) : null;
}

/**
 * `error`, met by the part of a batch that begins at item `start`, as the caller's batch reads it: the
 * item's index renumbered to its index in the whole batch (`messages[120]`, not `messages[20]` of the
 * second part) in the message, `details.field` and the per-item errors `details[name]`, and
 * `details.applied` the number of items earlier parts stored.
 */
function inBatch(error: MemoryServiceError, name: string, start: number, applied: number): MemoryServiceError {
  const index = new RegExp(`(?<![\\w.\\]])${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?:\\[(\\d+)\\]|\\.(\\d+)\\b)`, "g");
  const renumbered = (text: string): string =>
    text.replace(index, (_, bracket: string | undefined, dotted: string | undefined) =>
      bracket !== undefined ? `${name}[${Number(bracket) + start}]` : `${name}.${Number(dotted) + start}`,
    );
  let message = renumbered(error.message);
  if (applied > 0) {
    message += ` (the batch was sent in parts: ${name}[0] to ${name}[${applied - 1}] were applied)`;
  }
  const details: ErrorDetails = { ...error.details, applied };
  if (typeof details["field"] === "string") details["field"] = renumbered(details["field"]);
  const perItem = details[name];
  if (typeof perItem === "object" && perItem !== null && !Array.isArray(perItem) && Object.keys(perItem).every((key) => /^\d+$/.test(key))) {
    details[name] = Object.fromEntries(Object.entries(perItem).map(([key, value]) => [String(Number(key) + start), value]));
  }
  return errorWith(error, message, details);
}
