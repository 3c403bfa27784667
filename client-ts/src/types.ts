/**
 * The API's documents under short names, and the types of each operation's query, body and answer,
 * all read from the generated `schema.ts` (so a change of the service's schema is a type error here).
 */

import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

// --- the types of an operation, from `paths` -------------------------------------------------------

export type HttpMethod = "get" | "put" | "post" | "patch" | "delete";
export type ApiPath = keyof paths;
/** The operation at `P` answering `M` (`never` when the path has no such method). */
export type Operation<P extends ApiPath, M extends HttpMethod> = NonNullable<paths[P][M]>;

type JsonContent<T> = T extends { content: { "application/json": infer Body } } ? Body : undefined;
/** The JSON body an operation takes (`never` when it takes none). */
export type RequestBodyOf<O> = O extends { requestBody: infer Body } ? JsonContent<Body> : O extends { requestBody?: infer Body } ? JsonContent<NonNullable<Body>> : never;
/** The query parameters an operation takes. */
export type QueryOf<O> = O extends { parameters: { query?: infer Query } } ? NonNullable<Query> : never;
/** The path parameters an operation takes. */
export type PathParamsOf<O> = O extends { parameters: { path: infer Params } } ? Params : never;
type SuccessStatus = 200 | 201 | 204;
/** What an operation answers when it succeeds (`undefined` for a 204). */
export type AnswerOf<O> = O extends { responses: infer Responses }
  ? { [Status in keyof Responses & SuccessStatus]: JsonContent<Responses[Status]> }[keyof Responses & SuccessStatus]
  : never;

// --- documents ------------------------------------------------------------------------------------

export type Role = Schemas["RoleEnum"];
export type MessageFormat = Schemas["FormatEnum"];
export type SearchMode = Schemas["ModeEnum"];
export type MemoryKind = Schemas["MemoryKindEnum"];

/** A message to append: `role` and `content` required; `id` (a UUID) is set by the client when absent. */
export type MessageIn = Schemas["MessageInRequest"];
/** A message as the service keeps it; `seq` orders the conversation. */
export type StoredMessage = Schemas["MessageOut"];
export type AppendAnswer = Schemas["AppendOut"];
export type Conversation = Schemas["Conversation"];
export type ConversationDetail = Schemas["ConversationDetail"];
export type ConversationPage = Schemas["ConversationPage"];
export type ConversationErased = Schemas["EraseOut"];
export type UserErased = Schemas["UserEraseOut"];
export type Window = Schemas["WindowOut"];
export type LlmWindow = Schemas["LlmWindowOut"];
export type Context = Schemas["ContextOut"];
export type ContextRequest = Schemas["ContextInRequest"];
export type MemoryDocument = Schemas["MemoryDocument"];
export type SearchFilters = Schemas["SearchFiltersRequest"];
export type SearchRequest = Schemas["SearchBodyRequest"];
export type SearchResult = Schemas["SearchOut"];
export type SearchHit = Schemas["SearchHit"];
export type SearchStatus = Schemas["UserSearchStatus"];
export type UserSearchRequest = Schemas["UserSearchBodyRequest"];
/** The user search with the user's memories: turns and memories in one ranking, best first. */
export type FusedSearchResult = Schemas["FusedSearchOut"];
/** One result of it: a turn (`kind` `"turn"`, with `memory_ids`) or a memory (`kind` `"memory"`, with `message_ids`). */
export type FusedSearchHit = Schemas["FusedSearchResult"];
export type FusedTurn = Schemas["FusedTurn"];
export type FusedMemory = Schemas["FusedMemory"];
export type Summary = Schemas["SummaryOut"];
export type SummaryCreated = Schemas["SummaryCreatedOut"];
export type Fact = Schemas["FactOut"];
export type FactList = Schemas["FactListOut"];
export type FactsWritten = Schemas["FactsWrittenOut"];
export type FactHistoryPage = Schemas["FactHistoryPageOut"];
export type Memory = Schemas["MemoryOut"];
export type MemoryDetail = Schemas["MemoryDetailOut"];
export type MemoryList = Schemas["MemoryListOut"];
export type MemoryCorrection = Schemas["PatchedMemoryCorrectionRequest"];
export type ChatRequest = Schemas["ChatInRequest"];
export type ChatAnswer = Schemas["ChatOut"];
export type Checkpoint = Schemas["CheckpointOut"];
export type CheckpointRequest = Schemas["CheckpointInRequest"];
export type CheckpointList = Schemas["CheckpointListOut"];
export type CheckpointWrite = Schemas["WriteInRequest"];
export type CheckpointWritesStored = Schemas["WritesOut"];
export type CheckpointsDeleted = Schemas["CheckpointsDeleteOut"];
export type Status = Schemas["StatusOut"];
export type Usage = Schemas["UsageOut"];
export type StoreItem = Schemas["StoreItemOut"];
export type StoreSearchItem = Schemas["StoreSearchItemOut"];
export type StorePut = Schemas["StorePutInRequest"];
export type StoreSearch = Schemas["StoreSearchInRequest"];
