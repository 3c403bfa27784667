/**
 * LangChain.js chat history kept in the memory service (`memory-client/langchain`; needs `@langchain/core`).
 *
 * {@link ServiceChatMessageHistory} is a `BaseListChatMessageHistory` for one conversation, for
 * `RunnableWithMessageHistory` or your own loop:
 *
 * - `getMessages()` reads the conversation's window as LangChain messages, oldest first: the newest
 *   `window` messages (the tenant's `MEMORY_MAX_TURNS_PROMPT` unless given), starting at a turn, tool
 *   calls and results paired. An unknown conversation has no messages. With `maxTokens` it reads the
 *   service's budgeted context instead: older turns summarised into a system message (headed by
 *   `systemPrompt`), recent turns in full.
 * - `addMessages()` stores the messages in one append (split only past the service's batch limit),
 *   each with its id made on the client before the first attempt, so a retried append stores them once.
 * - `clear()` removes the conversation's messages (its memory document and checkpoints stay).
 *
 * Messages are stored in the format the Python client and the service share: `role`, `content` (text
 * or content blocks), `metadata.tool_calls`, `metadata.tool_call_id`, `metadata.artifact`, and the rest
 * of the message (`name`, `id`, `additional_kwargs`, `response_metadata`, `usage_metadata`...) under
 * `metadata.langchain`, so that a message reads back equal to the one added, from either language.
 */

import { BaseListChatMessageHistory } from "@langchain/core/chat_history";
import {
  AIMessage,
  ChatMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  type BaseMessage,
} from "@langchain/core/messages";

import { MemoryClient, type ClientOptions } from "./client.js";
import { NotFound } from "./errors.js";
import type { ContextRequest, MessageIn, Role } from "./types.js";

const ROLE_OF_TYPE: Readonly<Record<string, Role>> = { human: "user", ai: "assistant", system: "system", tool: "tool" };
const CHAT_ROLES: Readonly<Record<string, Role>> = {
  user: "user",
  human: "user",
  assistant: "assistant",
  ai: "assistant",
  system: "system",
  tool: "tool",
};
/** The message fields kept under `metadata.langchain` besides those the service reads itself. */
const KEPT_FIELDS = ["name", "id", "additional_kwargs", "response_metadata", "usage_metadata", "invalid_tool_calls", "status"] as const;

type Json = Record<string, unknown>;

export interface ServiceChatMessageHistoryOptions {
  /** A client of the service; or `baseUrl` and `apiKey` to make one. */
  client?: MemoryClient;
  baseUrl?: string;
  apiKey?: string;
  clientOptions?: ClientOptions;
  /** How many of the newest messages `getMessages()` reads (the tenant's setting unless given). */
  window?: number;
  /** Read the service's budgeted context of this many tokens instead of the window. */
  maxTokens?: number;
  /** With `maxTokens`: the system prompt heading the context. */
  systemPrompt?: string;
  /** With `maxTokens`: the context endpoint's other options (`short_term_turns`, `use_memory`...). */
  contextOptions?: Omit<ContextRequest, "max_tokens" | "format" | "system_prompt">;
  /** The owners given to the conversation on its first write. */
  userId?: string;
  agentId?: string;
}

/** The messages of one conversation of the memory service. */
export class ServiceChatMessageHistory extends BaseListChatMessageHistory {
  lc_namespace = ["memory_client", "langchain"];

  readonly conversationId: string;
  readonly client: MemoryClient;
  readonly #options: ServiceChatMessageHistoryOptions;

  constructor(conversationId: string, options: ServiceChatMessageHistoryOptions = {}) {
    super();
    if (!conversationId) throw new TypeError("A conversation id is required.");
    if (options.client === undefined && (!options.baseUrl || !options.apiKey)) {
      throw new TypeError("Pass a MemoryClient, or baseUrl and apiKey to make one.");
    }
    if (options.maxTokens === undefined && (options.systemPrompt !== undefined || options.contextOptions !== undefined)) {
      throw new TypeError("systemPrompt and contextOptions shape the budgeted context: pass maxTokens too.");
    }
    this.conversationId = conversationId;
    this.client = options.client ?? new MemoryClient(options.baseUrl!, options.apiKey!, options.clientOptions);
    this.#options = options;
  }

  override async getMessages(): Promise<BaseMessage[]> {
    const { maxTokens, systemPrompt, contextOptions, window } = this.#options;
    if (maxTokens === undefined) {
      const messages = await this.client.window(this.conversationId, { limit: window, format: "langchain" });
      return messages.map(fromLangChainDict);
    }
    try {
      const context = await this.client.context(this.conversationId, {
        ...contextOptions,
        max_tokens: maxTokens,
        format: "langchain",
        ...(systemPrompt === undefined ? {} : { system_prompt: systemPrompt }),
      });
      return context.messages.map(fromLangChainDict);
    } catch (error) {
      if (error instanceof NotFound) return []; // an unknown conversation has no messages, as its window has none
      throw error;
    }
  }

  override async addMessage(message: BaseMessage): Promise<void> {
    await this.addMessages([message]);
  }

  override async addMessages(messages: BaseMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.client.append(this.conversationId, messages.map(toService), {
      user_id: this.#options.userId ?? "",
      agent_id: this.#options.agentId ?? "",
    });
  }

  override async clear(): Promise<void> {
    await this.client.clear(this.conversationId);
  }
}

/** A LangChain message as the body of an append: `role`, `content` (text, or the content blocks) and `metadata`. */
export function toService(message: BaseMessage): MessageIn {
  const type = message.getType();
  let role: Role | undefined;
  if (type === "generic") {
    const named = String((message as ChatMessage).role ?? "").toLowerCase();
    role = CHAT_ROLES[named];
    if (role === undefined) {
      throw new TypeError(`A ChatMessage with role ${JSON.stringify(named)} cannot be stored; roles are user, assistant, system, tool.`);
    }
  } else {
    role = ROLE_OF_TYPE[type];
    if (role === undefined) {
      throw new TypeError(`A message of type ${JSON.stringify(type)} cannot be stored; send human, ai, system, tool or chat messages.`);
    }
  }
  const fields = message as unknown as Json;
  const metadata: Json = {};
  const data: Json = {};
  const toolCalls = fields["tool_calls"];
  if (type === "ai" && Array.isArray(toolCalls) && toolCalls.length > 0) {
    metadata["tool_calls"] = toolCalls.map(({ id, name, args }: Json) => ({ id, name, args, type: "tool_call" }));
  }
  if (type === "tool") {
    metadata["tool_call_id"] = fields["tool_call_id"];
    if (fields["artifact"] !== undefined) metadata["artifact"] = fields["artifact"];
  }
  for (const name of KEPT_FIELDS) {
    const value = fields[name];
    if (name === "status" && (type !== "tool" || value === "success")) continue;
    if (!isEmpty(value)) data[name] = value;
  }
  let content: unknown = message.content;
  if (Array.isArray(content) && !content.every(isPart)) {
    // Bare strings among the blocks: the service's parts are typed objects, so the text is stored
    // and the list kept with the message's other fields.
    data["content"] = content;
    content = message.text;
  }
  const stored = type === "generic" ? { type: "chat", data: { ...data, role: (message as ChatMessage).role } } : { type, data };
  metadata["langchain"] = stored;
  return { role, content, metadata };
}

/**
 * A message as the service answers it in the `langchain` format (`{"type", "data"}`, the window's and
 * the context's) as the LangChain.js message it was.
 */
export function fromLangChainDict(stored: Json): BaseMessage {
  const type = stored["type"];
  const data = { ...((stored["data"] ?? {}) as Json) };
  for (const [name, value] of Object.entries(data)) if (value === null) delete data[name];
  const common = {
    content: (data["content"] ?? "") as string,
    name: data["name"] as string | undefined,
    id: data["id"] as string | undefined,
    additional_kwargs: (data["additional_kwargs"] ?? {}) as Json,
    response_metadata: (data["response_metadata"] ?? {}) as Json,
  };
  switch (type) {
    case "human":
      return new HumanMessage(common);
    case "ai":
      return new AIMessage({
        ...common,
        tool_calls: ((data["tool_calls"] ?? []) as Json[]).map((call) => ({
          id: call["id"] as string | undefined,
          name: String(call["name"] ?? ""),
          args: (call["args"] ?? {}) as Json,
          type: "tool_call" as const,
        })),
        ...(data["invalid_tool_calls"] ? { invalid_tool_calls: data["invalid_tool_calls"] as never } : {}),
        ...(data["usage_metadata"] ? { usage_metadata: data["usage_metadata"] as never } : {}),
      });
    case "tool":
      return new ToolMessage({
        ...common,
        tool_call_id: String(data["tool_call_id"] ?? ""),
        ...(data["artifact"] === undefined ? {} : { artifact: data["artifact"] }),
        ...(data["status"] === "error" ? { status: "error" as const } : {}),
      });
    case "chat":
      return new ChatMessage({ ...common, role: String(data["role"] ?? "user") });
    default:
      return new SystemMessage(common);
  }
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && Object.keys(value).length === 0;
}

function isPart(item: unknown): boolean {
  return typeof item === "object" && item !== null && typeof (item as Json)["type"] === "string" && (item as Json)["type"] !== "";
}
