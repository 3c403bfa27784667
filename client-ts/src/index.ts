/**
 * memory-client: the TypeScript client of the conversation memory service.
 *
 * `MemoryClient` covers the whole REST API; the LangChain.js chat history is in
 * `memory-client/langchain`, the LangGraph.js checkpoint saver and store in `memory-client/langgraph`.
 */

export {
  API_PREFIX,
  CHAT_TIMEOUT,
  MAX_BATCH,
  MemoryClient,
  RETRY_AFTER_CAP,
  type CallOptions,
  type ChatEvent,
  type CheckpointListQuery,
  type ClientOptions,
  type ConversationListQuery,
  type MemoryListQuery,
  type MessageListQuery,
  type NamespaceListQuery,
  type Owners,
  type PageQuery,
  type SearchOptions,
  type StoreOperation,
  type UsageQuery,
  type UserSearchOptions,
  type UserSearchWithMemoriesOptions,
  type WindowQuery,
} from "./client.js";
export {
  BadRequest,
  Conflict,
  Forbidden,
  MemoryServiceError,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServiceUnavailable,
  Unauthorized,
  Unreachable,
  type ErrorDetails,
} from "./errors.js";
export { CONVERSATION_ID_RULE, checkConversationId, uuid7 } from "./ids.js";
export type * from "./types.js";
export type { components, operations, paths } from "./schema.js";
