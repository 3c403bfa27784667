/**
 * The memory service's API (OpenAPI 3), as TypeScript types: `paths` by address and method,
 * `components["schemas"]` by name.
 *
 * Generated from the service's schema by `npm run generate -- <schema file>`: do not edit.
 */

export interface paths {
    "/api/v1/conversations/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["conversations_list"];
        put?: never;
        post: operations["v1_conversations_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The conversation (``conversations``) with how much of it search covers (``search``). */
        get: operations["v1_conversations_retrieve"];
        put?: never;
        post?: never;
        /** @description The conversation (``conversations``) with how much of it search covers (``search``). */
        delete: operations["v1_conversations_destroy"];
        options?: never;
        head?: never;
        /** @description The conversation (``conversations``) with how much of it search covers (``search``). */
        patch: operations["v1_conversations_partial_update"];
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/chat/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** @description The agent loop: store the user's message, build its context (recent turns, summary and, with use_memory, long-term memory), ask the tenant's chat model, store its answer and update the memory document. The model failing is 502 model_error, timing out 504 model_timeout (the user's message stays stored); no model configured is 503 chat_model_not_configured. */
        post: operations["v1_conversations_chat_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/checkpoints/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The conversation's checkpoints, newest first, each with its pending writes. */
        get: operations["conversations_checkpoints_list"];
        put?: never;
        /** @description Save a checkpoint (201), or replace the one with this id in this namespace (200: it keeps its place and its writes). Only the newest MEMORY_MAX_CHECKPOINTS of the namespace are kept. The conversation is created on its first write. */
        post: operations["conversations_checkpoints_save"];
        /** @description Delete the conversation's checkpoints and their writes: every namespace, or the one given. */
        delete: operations["conversations_checkpoints_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["conversations_checkpoints_retrieve"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/writes/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** @description Store a task's pending writes against a checkpoint. A write with idx >= 0 that is already stored for this task is kept (retries are idempotent); one with a negative idx (error, interrupt, scheduled, resume) replaces the stored one. written counts the distinct writes sent. */
        post: operations["conversations_checkpoints_writes_save"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/checkpoints/latest/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The newest checkpoint of the namespace; 404 when it has none. */
        get: operations["conversations_checkpoints_latest"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/context/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** @description build_agent_context: the messages to send to the LLM within a token budget (system prompt with the summary of older turns, recent turns in full, the query), with the figures behind them. */
        post: operations["v1_conversations_context_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/memory/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["v1_conversations_memory_retrieve"];
        put: operations["v1_conversations_memory_update"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/messages/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["conversations_messages_window"];
        put?: never;
        /** @description Append one message or a batch. A 201 means the write is durable (broker-confirmed) and already in the window. Resending a message with the same id and content answers 200 with the stored message and the seq it was given the first time; send your own ids and resend the same body after any failure. A 503 carries Retry-After and error.code: broker_unavailable (nothing stored), write_indeterminate (the write may be stored: resend with the ids in error.details.messages, which keep their seqs), idempotency_unknown (the service cannot tell whether your ids were stored; nothing written; resend the same ids later), conversation_busy or backends_unavailable (nothing stored). user_id names the conversation's user: recorded while it has none, and a write naming another user is a 409 user_mismatch (nothing stored). agent_id is recorded when the conversation is new; several agents may append to one conversation. */
        post: operations["v1_conversations_messages_create"];
        /** @description Clear the conversation's messages (a chat history's clear()); the conversation, its memory document and its checkpoints stay. */
        delete: operations["conversations_messages_clear"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/messages/{message_id}/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["v1_conversations_messages_retrieve"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/search/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Semantic search, fused with keyword (BM25) search by default: the messages of this conversation (and of the same user's other conversations, by scope) most relevant to q, best first. The filters narrow the messages ranked before ranking: top_k is the best among those that match. */
        get: operations["v1_conversations_search_retrieve"];
        put?: never;
        /** @description The same search with its parameters and filters in a JSON body. */
        post: operations["v1_conversations_search_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/summaries/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The conversation's summaries, newest first: one every MEMORY_SUMMARY_EVERY message pairs, over the last MEMORY_SUMMARY_WINDOW messages of that pair, and any made on request. */
        get: operations["conversations_summaries_list"];
        put?: never;
        /** @description Summarise the conversation's last MEMORY_SUMMARY_WINDOW persisted messages now, filed under its current pair count; if a summary is filed there already, that one is returned. The chat model is MEMORY_SUMMARY_MODEL, or the rule-based summary when it is unset or fails. 409 when the conversation has no persisted message. */
        post: operations["conversations_summaries_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/conversations/{conversation_id}/window/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description get_window_for_llm: the newest messages in an LLM format, starting at a turn. */
        get: operations["v1_conversations_window_retrieve"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/status/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description With a tenant's API key: scope "tenant", whether the database, cache and broker answer, and the tenant's own cache figures and conversations awaiting a cache repair. With the metrics token (Authorization: Bearer) or a superuser's admin session: scope "deployment", with latencies, error texts, queue depths and every tenant's figures. */
        get: operations["v1_status_retrieve"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/store/batch/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** @description Run a batch of store operations in order, in one transaction, and answer one result per operation. Any refused operation refuses the whole batch (400 naming operations[i] and its field); a 2xx means every write is stored. */
        post: operations["store_batch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/store/items/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description One item; 404 when there is none (or it expired). */
        get: operations["store_item_retrieve"];
        /** @description Create or replace the item (an upsert by namespace and key). */
        put: operations["store_item_put"];
        post?: never;
        /** @description Delete the item; deleting one that does not exist is a no-op. */
        delete: operations["store_item_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/store/namespaces/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The namespaces holding items, sorted, cut to max_depth labels. */
        get: operations["store_namespaces_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/store/search/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** @description Items under a namespace prefix that pass the filter: ranked by hybrid search (BM25 and embeddings, fused by reciprocal rank) when a query is given, else in the order they were first written. */
        post: operations["store_search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/usage/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The tenant's usage per UTC day, newest first: messages stored, searches, chat runs, model tokens and storage. Past days are measured once they are over; today's figures are so far. */
        get: operations["usage_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** @description Erase one user everywhere: their conversations, messages, vectors, summaries, checkpoints, facts, extracted memories, dead letters and cache keys, and writes of theirs still queued. Answers what was erased. */
        delete: operations["v1_users_destroy"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/facts/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The user's facts, most recently updated first. A user without facts has an empty list. */
        get: operations["users_facts_list"];
        put?: never;
        /** @description Set one fact or a batch, all or nothing: 201 when any fact was new, else 200. A changed value is kept in the history; sending the value a fact already holds changes nothing. Values are strings: a number or boolean is a 400. */
        post: operations["users_facts_set"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/facts/{key}/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description One fact of the user; 404 when the user has no fact with this key. */
        get: operations["users_fact_retrieve"];
        /** @description Set the fact: 201 when it is new, 200 when it existed (its previous value goes to the history; the same value again changes nothing). */
        put: operations["users_fact_set"];
        post?: never;
        /** @description Delete the fact; its history keeps the deleted value. */
        delete: operations["users_fact_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/facts/{key}/history/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The changes of one key, newest first, also after the fact was deleted; 404 when it never existed. */
        get: operations["users_fact_history"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/facts/history/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Every change of the user's facts (sets and deletes, of current and deleted facts), newest first. */
        get: operations["users_facts_history"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/memories/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The user's memories extracted from their conversations: current ones, newest change first (limit, offset), or with query the top_k best matches by hybrid search (score set). kind, subject, valid_at, include_past, conversation_id, start_date and end_date filter either. extraction says whether memories are extracted for this tenant, and when not, why. */
        get: operations["users_memories_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/memories/{memory_id}/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description One memory with its history (every change, newest first: what it said before, when it stopped holding, which messages and which model or person changed it). */
        get: operations["users_memories_get"];
        put?: never;
        post?: never;
        /** @description Take a memory back: it stops being current (valid_to now) and its history is kept. Erasing the user (DELETE /users/{id}/) or a conversation erases what was derived from it. */
        delete: operations["users_memories_delete"];
        options?: never;
        head?: never;
        /** @description Correct a memory by hand (kind, subject, text, valid_from, valid_to, confidence): the version replaced is kept in its history, recorded as made by the API. valid_to takes it back; null makes it current again. */
        patch: operations["users_memories_correct"];
        trace?: never;
    };
    "/api/v1/users/{user_id}/search/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Search every conversation of one user (the user_id given when its messages were appended); conversation_id narrows it to some of them. With include_memories=true the user's extracted memories are ranked with the turns, in one list whose results each say their kind (turn or memory). */
        get: operations["v1_users_search_retrieve"];
        put?: never;
        /** @description The same search with its parameters and filters in a JSON body. */
        post: operations["v1_users_search_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/users/{user_id}/search/status/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description How much of one user's history search covers: their persisted messages with and without a vector, and the writes not persisted yet. A user id with no messages answers zeros, not searchable, with reason no_messages (nothing to search: polling will not change it). */
        get: operations["v1_users_search_status_retrieve"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description * `set` - set
         *     * `delete` - delete
         * @enum {string}
         */
        ActionEnum: "set" | "delete";
        AppendOut: {
            conversation_id: string;
            messages: components["schemas"]["MessageOut"][];
        };
        /**
         * @description One message, or ``{"messages": [...]}`` for a batch, with the owner ids: the user is the
         *     conversation's (``services.lifecycle.user_check``), the agent is recorded when it is new.
         */
        AppendRequest: {
            messages?: components["schemas"]["MessageInRequest"][];
            role?: components["schemas"]["RoleEnum"];
            content?: unknown;
            /** Format: uuid */
            id?: string;
            metadata?: unknown;
            /** Format: date-time */
            created_at?: string;
            /** @default  */
            user_id?: string;
            /** @default  */
            agent_id?: string;
        };
        BackendStatus: {
            ok: boolean;
            /**
             * Format: double
             * @description Operators only.
             */
            latency_ms?: number;
            /** @description Operators only: why the backend does not answer. */
            error?: string;
        };
        /** @description One server-sent event of a streamed answer (``event:`` and ``data:`` lines). */
        ChatEvent: {
            event: components["schemas"]["EventEnum"];
            /** @description JSON. start: the stored user message and the context used; token: {text}; done: the whole answer, as the 201 body; error: {error: {code, message, details}}. */
            data: string;
        };
        ChatHistory: {
            /** @description Whether the conversation's history went into the prompt. */
            used: boolean;
            /** @description Earlier messages the model got in full. */
            messages: number;
            /** @description Why the history is missing, when it is. */
            error: string | null;
        };
        /** @description One chat turn: the user's message and how to answer it; each default is the tenant's setting. */
        ChatInRequest: {
            /** @description The user's message. */
            content: string;
            system_prompt?: string;
            /** @description Another model of the tenant's provider (MEMORY_CHAT_MODEL's); the provider, server and credentials stay the tenant's. */
            model?: string;
            /**
             * Format: double
             * @description Default MEMORY_CHAT_TEMPERATURE.
             */
            temperature?: number;
            /** @description The answer's bound in tokens; at most (and by default) MEMORY_CHAT_MAX_TOKENS. */
            max_tokens?: number;
            /** @description Add long-term memory (summaries, the user's facts, relevant older messages). Unset: added when the message refers to earlier context. */
            use_memory?: boolean | null;
            /**
             * @description Answer as server-sent events (or send Accept: text/event-stream).
             * @default false
             */
            stream?: boolean;
            /**
             * Format: uuid
             * @description Your id for the user message: sending it again neither stores it twice nor asks the model twice.
             */
            message_id?: string;
            /** @description Stored with the user message. */
            metadata?: unknown;
            /** @default  */
            user_id?: string;
            /** @default  */
            agent_id?: string;
        };
        ChatOut: {
            conversation_id: string;
            user_message: components["schemas"]["MessageOut"];
            assistant_message: components["schemas"]["MessageOut"];
            /** @description provider:model */
            model: string;
            /** @description input_tokens, output_tokens, total_tokens (estimated: true when the provider gave none). */
            usage: {
                [key: string]: unknown;
            };
            /**
             * Format: double
             * @description Seconds from the model's call to its whole answer.
             */
            execution_time: number;
            history: components["schemas"]["ChatHistory"];
            need_memory: boolean;
            memory_reason: string;
            /** @description The memory bundle, when memory was used. */
            memory_context: {
                [key: string]: unknown;
            } | null;
            /** @description The built context's figures (tokens, turns, summary). */
            context: {
                [key: string]: unknown;
            } | null;
            memory_updated: boolean;
            /** @description The message was sent before and already answered: nothing new was stored. */
            replayed: boolean;
        };
        CheckpointInRequest: {
            /** @description Your own id; a new UUID when absent. Saving an id again replaces that checkpoint. */
            checkpoint_id?: string;
            /**
             * @description The graph namespace; "" is the root graph.
             * @default
             */
            namespace?: string;
            /** @description The checkpoint this one follows; null for the first. */
            parent_id?: string | null;
            /** @description The checkpoint itself: a JSON object. */
            state: unknown;
            metadata?: unknown;
        };
        CheckpointListOut: {
            conversation_id: string;
            /** @description Newest first. */
            checkpoints: components["schemas"]["CheckpointOut"][];
            count: number;
        };
        CheckpointOut: {
            conversation_id: string;
            namespace: string;
            checkpoint_id: string;
            parent_id: string | null;
            state: unknown;
            metadata: unknown;
            /** Format: date-time */
            created_at: string;
            /** @description Ordered by task_path, task_id, idx. */
            writes: components["schemas"]["WriteOut"][];
        };
        CheckpointsDeleteOut: {
            conversation_id: string;
            deleted: number;
        };
        ContextEntity: {
            name: string;
            type?: string;
            /** turn number */
            _turn_number: number;
            message_id: string;
        };
        /** @description What the agent is about to send; each default is the tenant's MEMORY_* setting. */
        ContextInRequest: {
            /** @description The current user message, sent last. */
            query?: string;
            system_prompt?: string;
            /** @description Default MEMORY_MAX_TOKENS. */
            max_tokens?: number;
            /** @description Turns kept in full. Default MEMORY_SHORT_TERM_TURNS. */
            short_term_turns?: number;
            /** @description Older turns summarized. Default MEMORY_LONG_TERM_TURNS. */
            long_term_turns?: number;
            /**
             * Format: double
             * @description Default MEMORY_COMPRESSION_THRESHOLD.
             */
            compression_threshold?: number;
            /** @default openai */
            format?: components["schemas"]["FormatEnum"];
            /** @description Also answer the latest checkpoint of this namespace ("" is the root graph). */
            checkpoint_namespace?: string;
            /**
             * @description Add summaries, the user's facts and the older messages relevant to the query to the system message, and answer the memory bundle and the rendered prompt.
             * @default false
             */
            use_memory?: boolean;
            /** @description With use_memory: the relevant messages the bundle lists (memory.context). Default MEMORY_TOP_K. The system message holds as many as its budget allows, whatever this number. */
            top_k?: number;
            /** @description With use_memory: the search filters (as a POST search's) its relevant messages obey. */
            memory_filters?: components["schemas"]["SearchFiltersRequest"];
        };
        ContextOut: {
            conversation_id: string;
            format: components["schemas"]["FormatEnum"];
            /** @description System prompt (with the summary), history, query. */
            messages: {
                [key: string]: unknown;
            }[];
            session_summary: string | null;
            compressed: boolean;
            /** @description Turns in the conversation before the query. */
            total_turns: number;
            turns_in_full: number;
            summarized_turns: number;
            /** @description cl100k_base prompt tokens, message overhead included. */
            estimated_tokens: number;
            /** @description cl100k_base tokens of the message contents alone. */
            content_tokens: number;
            max_tokens: number;
            tokens_remaining: number;
            entities: components["schemas"]["ContextEntity"][];
            source: string;
            cached: boolean;
            /** @description With checkpoint_namespace: the latest one. */
            checkpoint?: {
                [key: string]: unknown;
            } | null;
            /** @description With use_memory: the memory bundle (context, recent_messages, summaries, memories (the user's facts), extracted_memories, ranking (when the tenant extracts: the best turns and memories in one ranking, each with its kind), query_embedding_dim, unavailable, notices (what the search could not do, each with a code and a sentence: query_not_embedded while the embedding server does not answer, the reranker's failures)). */
            memory?: {
                [key: string]: unknown;
            };
            /** @description With use_memory: the prompt assembled from the bundle. */
            rendered_prompt?: string;
        };
        Conversation: {
            conversation_id: string;
            user_id?: string;
            agent_id?: string;
            readonly archived: boolean;
            metadata?: unknown;
            readonly message_count: number;
            readonly token_count: number;
            readonly last_seq: number;
            /** Format: date-time */
            readonly created_at: string;
            /** Format: date-time */
            readonly updated_at: string;
        };
        /** @description The conversation with how much of it search covers (the list leaves that out: one query per row). */
        ConversationDetail: {
            conversation_id: string;
            user_id?: string;
            agent_id?: string;
            readonly archived: boolean;
            metadata?: unknown;
            readonly message_count: number;
            readonly token_count: number;
            readonly last_seq: number;
            /** Format: date-time */
            readonly created_at: string;
            /** Format: date-time */
            readonly updated_at: string;
            readonly search_coverage: components["schemas"]["SearchCoverage"];
        };
        /** @description One page of the conversation list (limit/offset pagination). */
        ConversationPage: {
            count: number;
            /** Format: uri */
            next: string | null;
            /** Format: uri */
            previous: string | null;
            results: components["schemas"]["Conversation"][];
        };
        ConversationRequest: {
            conversation_id: string;
            user_id?: string;
            agent_id?: string;
            metadata?: unknown;
        };
        EraseOut: {
            conversation_id: string;
            messages_erased: number;
            cache_keys_erased: number;
        };
        Error: {
            /** @description Stable, for programs: validation_error, parse_error, limit_exceeded, payload_too_large, uri_too_long, not_authenticated, authentication_failed, permission_denied, not_found, method_not_allowed, unsupported_media_type, conflict, throttled, service_unavailable, server_error, ... */
            code: string;
            /** @description For people: what was wrong, naming the field and the limit when there is one. */
            message: string;
            /** @description The per-field errors of a validation_error; for a limit, field, size and limit (the setting's value). */
            details: unknown;
        };
        /** @description Every error answer of the API, whatever its status. */
        ErrorDocument: {
            error: components["schemas"]["Error"];
        };
        /**
         * @description * `start` - start
         *     * `token` - token
         *     * `done` - done
         *     * `error` - error
         * @enum {string}
         */
        EventEnum: "start" | "token" | "done" | "error";
        ExtractionStatus: {
            enabled: boolean;
            model: string | null;
            reason: (components["schemas"]["ReasonEnum"] | components["schemas"]["NullEnum"]) | null;
            detail: string | null;
        };
        FactChangeOut: {
            key: string;
            action: components["schemas"]["ActionEnum"];
            /** @description The value this change set; "" for a delete. */
            value: string;
            /** @description The value it superseded; null for a new fact. */
            previous_value: string | null;
            /** Format: date-time */
            changed_at: string;
        };
        FactHistoryPageOut: {
            count: number;
            /** Format: uri */
            next: string | null;
            /** Format: uri */
            previous: string | null;
            /** @description Newest first. */
            results: components["schemas"]["FactChangeOut"][];
        };
        FactListOut: {
            user_id: string;
            /** @description Most recently updated first. */
            facts: components["schemas"]["FactOut"][];
            /** @description The sum of the listed facts' token counts. */
            total_tokens: number;
        };
        FactOut: {
            key: string;
            value: string;
            /** @description Tokens (cl100k_base) of the fact as a prompt shows it: "key: value". */
            token_count: number;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
        };
        FactValueInRequest: {
            /** @description The fact's new value: a string. */
            value: string;
        };
        /** @description Either a batch ``{"facts": {key: value, ...}}`` or one fact ``{"key": ..., "value": ...}``. */
        FactsInRequest: {
            /** @description Keys to values; set all or none. */
            facts?: {
                [key: string]: string;
            };
            /** @description One fact's key (instead of facts). */
            key?: string;
            /** @description One fact's value (with key). */
            value?: string;
        };
        FactsWrittenOut: {
            user_id: string;
            /** @description The facts sent, in the order sent, as now stored. */
            facts: components["schemas"]["FactOut"][];
            /** @description The keys that were new. */
            created: string[];
        };
        /**
         * @description * `openai` - OpenAI chat messages: role, content, tool_calls, tool_call_id
         *     * `langchain` - LangChain message dicts
         * @enum {string}
         */
        FormatEnum: "openai" | "langchain";
        FusedMemory: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "memory";
            /** Format: uuid */
            memory_id: string;
            /** @description fact, preference, event or relation. */
            memory_kind: string;
            subject: string;
            text: string;
            /** Format: date-time */
            valid_from: string | null;
            /**
             * Format: date-time
             * @description Set on a memory taken back (only with include_past_memories).
             */
            valid_to: string | null;
            /** @description The messages it was read from. */
            message_ids: string[];
            /** @description Their conversations. */
            conversation_ids: string[];
            /**
             * Format: double
             * @description The memory search's own score.
             */
            memory_score: number | null;
            /**
             * Format: double
             * @description The fused score, on one scale with the turns'.
             */
            score: number;
        };
        /**
         * @description * `memory` - memory
         * @enum {string}
         */
        FusedMemoryKindEnum: "memory";
        FusedSearchOut: {
            query: string;
            mode: string;
            scope: string;
            /** @description Conversations searched. */
            conversations: number;
            /** @description Messages the ranking considered. */
            candidates: number;
            embedding_model: string;
            query_embedding_dim: number | null;
            results: components["schemas"]["FusedSearchResult"][];
            /** @description True only when the results are in the reranker's order (the tenant configures one, the request did not send rerank=false, and it answered). */
            reranked: boolean;
            /** @description The reranker of this search (its model, else its format), answered or not; null when none is configured or the request sent rerank=false. */
            rerank_model: string | null;
            /** @description What this answer could not do as configured, each with a code and a sentence (empty: nothing): the results are still the best order the service could give, e.g. ranked by words alone while the embedding server does not answer (query_not_embedded), or in the ranking's order while the reranker fails (rerank_failed) or is not called after a failure (rerank_unavailable). */
            notices: components["schemas"]["Notice"][];
            /** @description Memories the ranking considered. */
            memories_considered: number;
        };
        FusedSearchResult: components["schemas"]["FusedTurn"] | components["schemas"]["FusedMemory"];
        FusedTurn: {
            message_id: string;
            conversation_id: string;
            seq: number;
            role: string;
            content: string;
            /** Format: date-time */
            created_at: string;
            metadata: unknown;
            /**
             * Format: double
             * @description Cosine similarity with the query, if embedded.
             */
            similarity: number | null;
            /**
             * Format: double
             * @description BM25 score, if the message shares terms with the query.
             */
            keyword_score: number | null;
            /**
             * Format: double
             * @description The fused score, on one scale with the memories' (1: the best turn).
             */
            score: number;
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "turn";
            /** @description The user's memories read from this turn (current ones; past ones too when asked). */
            memory_ids: string[];
        };
        /**
         * @description * `turn` - turn
         * @enum {string}
         */
        FusedTurnKindEnum: "turn";
        LlmWindowOut: {
            conversation_id: string;
            format: components["schemas"]["FormatEnum"];
            messages: {
                [key: string]: unknown;
            }[];
            count: number;
            source: string;
        };
        /**
         * @description * `fact` - fact
         *     * `preference` - preference
         *     * `event` - event
         *     * `relation` - relation
         * @enum {string}
         */
        MemoryCorrectionKindEnum: "fact" | "preference" | "event" | "relation";
        MemoryDetailOut: {
            /** Format: uuid */
            readonly memory_id: string;
            kind: components["schemas"]["MemoryKindEnum"];
            subject: string;
            text: string;
            /** Format: date-time */
            valid_from?: string | null;
            /** Format: date-time */
            valid_to?: string | null;
            readonly current: boolean;
            /** @description On a version an update replaced: the id of the memory that holds on (null on every other memory). */
            readonly version_of: string | null;
            /** Format: double */
            confidence?: number;
            readonly message_ids: string[];
            readonly conversation_ids: string[];
            model?: string;
            /** Format: date-time */
            created_at?: string;
            /** Format: date-time */
            updated_at?: string;
            /** Format: double */
            readonly score: number | null;
            readonly history: {
                [key: string]: unknown;
            }[];
        };
        MemoryDocument: {
            messages?: unknown[];
            metadata?: unknown;
        };
        MemoryDocumentRequest: {
            messages?: unknown[];
            metadata?: unknown;
        };
        /**
         * @description * `fact` - Fact
         *     * `preference` - Preference
         *     * `event` - Event
         *     * `relation` - Relation
         * @enum {string}
         */
        MemoryKindEnum: "fact" | "preference" | "event" | "relation";
        MemoryListOut: {
            user_id: string;
            extraction: components["schemas"]["ExtractionStatus"];
            /** @description Memories matching the filters (a query: the hits answered). */
            count: number;
            results: components["schemas"]["MemoryOut"][];
            /** @description True only when a query's hits are in the reranker's order. */
            reranked: boolean;
            /** @description The reranker of this search (its model, else its format), answered or not; null when none is configured or the request sent rerank=false. */
            rerank_model: string | null;
            /** @description What a query's answer could not do as configured, each with a code and a sentence (empty: nothing): in the ranking's order while the reranker fails (rerank_failed) or is not called after a failure (rerank_unavailable). */
            notices: components["schemas"]["MemorySearchNotice"][];
        };
        MemoryOut: {
            /** Format: uuid */
            readonly memory_id: string;
            kind: components["schemas"]["MemoryKindEnum"];
            subject: string;
            text: string;
            /** Format: date-time */
            valid_from?: string | null;
            /** Format: date-time */
            valid_to?: string | null;
            readonly current: boolean;
            /** @description On a version an update replaced: the id of the memory that holds on (null on every other memory). */
            readonly version_of: string | null;
            /** Format: double */
            confidence?: number;
            readonly message_ids: string[];
            readonly conversation_ids: string[];
            model?: string;
            /** Format: date-time */
            created_at?: string;
            /** Format: date-time */
            updated_at?: string;
            /** Format: double */
            readonly score: number | null;
        };
        MemorySearchNotice: {
            code: string;
            message: string;
        };
        /**
         * @description One message. OpenAI-style ``tool_calls`` (assistant), ``tool_call_id`` (tool) and ``name`` may be
         *     sent beside ``content``: they are kept in ``metadata`` under the same names, where the context
         *     builder reads them (``memory_wire.messages`` describes the convention). ``content`` may be a
         *     list of content parts (``conversations.content_parts`` holds that contract).
         */
        MessageInRequest: {
            /**
             * Format: uuid
             * @description Your own id (UUID) makes the write idempotent. A UUIDv7 (stamped with the time it was made) is told new sooner after the service lost its record of writes in flight; one stamped more than MEMORY_MESSAGE_ID_CLOCK_SKEW seconds ahead of the service's clock is refused (400 clock_skew).
             */
            id?: string;
            role: components["schemas"]["RoleEnum"];
            /** @description Text, a list of content parts (objects with a string type: text, image_url, image...), or null (assistant only, stored as empty). */
            content: unknown;
            metadata?: unknown;
            /**
             * Format: date-time
             * @description Defaults to the time of the write.
             */
            created_at?: string;
            tool_calls?: {
                [key: string]: unknown;
            }[];
            tool_call_id?: string;
            name?: string;
        };
        MessageOut: {
            /** Format: uuid */
            id: string;
            conversation_id: string;
            /** @description Strictly increasing within the conversation; the total order. */
            seq: number;
            role: components["schemas"]["RoleEnum"];
            /** @description As sent: text, or the list of content parts. */
            content: unknown;
            /** @description As sent (an artifact included), with the moved tool_calls, tool_call_id, name. */
            metadata: unknown;
            /** Format: date-time */
            created_at: string;
            /** @description cl100k_base tokens of the content's text. */
            token_count: number;
        };
        /**
         * @description * `hybrid` - hybrid
         *     * `semantic` - semantic
         *     * `keyword` - keyword
         * @enum {string}
         */
        ModeEnum: "hybrid" | "semantic" | "keyword";
        Notice: {
            code: string;
            message: string;
        };
        /** @enum {unknown} */
        NullEnum: null;
        PatchedConversationUpdateRequest: {
            user_id?: string;
            agent_id?: string;
            archived?: boolean;
            metadata?: unknown;
        };
        /** @description A correction: any of these; null valid_to makes a memory current again. */
        PatchedMemoryCorrectionRequest: {
            kind?: components["schemas"]["MemoryCorrectionKindEnum"];
            subject?: string;
            text?: string;
            /** @description YYYY-MM-DD or ISO 8601 with its offset. */
            valid_from?: string;
            /** @description YYYY-MM-DD, ISO 8601, or null. */
            valid_to?: string | null;
            /** Format: double */
            confidence?: number;
        };
        /**
         * @description * `disabled` - disabled
         *     * `no_model` - no_model
         * @enum {string}
         */
        ReasonEnum: "disabled" | "no_model";
        /**
         * @description * `user` - User
         *     * `assistant` - Assistant
         *     * `system` - System
         *     * `tool` - Tool
         * @enum {string}
         */
        RoleEnum: "user" | "assistant" | "system" | "tool";
        /** @description The same search as a JSON body: lists as JSON arrays, ``metadata`` as a JSON object. */
        SearchBodyRequest: {
            /**
             * Format: date-time
             * @description Messages created at or after this time.
             */
            start_date?: string;
            /**
             * Format: date-time
             * @description Messages created at or before this time.
             */
            end_date?: string;
            /** @description user and/or assistant. */
            role?: string[];
            /** @description The message's name (metadata name, or the LangChain message's name). At most 50 values of at most 200 characters. */
            name?: string[];
            /** @description The conversation's agent_id. At most 50 values of at most 200 characters. */
            agent_id?: string[];
            /** @description Only these conversations of the scope (never another user's or tenant's). At most 50 values of at most 200 characters. */
            conversation_id?: string[];
            /** @description Equality or "in" on top-level keys of the message's metadata: {"topic": "travel", "lang": {"in": ["en", "es"]}}. At most 10 keys, 50 values a key. */
            metadata?: {
                [key: string]: unknown;
            };
            /** @description The words or question to search for (at most MEMORY_MAX_QUERY_CHARS). */
            q: string;
            /**
             * @description hybrid (default), semantic (vectors) or keyword.
             *
             *     * `hybrid` - hybrid
             *     * `semantic` - semantic
             *     * `keyword` - keyword
             */
            mode?: components["schemas"]["ModeEnum"];
            /**
             * @description auto: the conversation, and the user's others while it holds fewer than cross_session_trigger messages.
             *
             *     * `auto` - auto
             *     * `conversation` - conversation
             *     * `user` - user
             */
            scope?: components["schemas"]["SearchBodyScopeEnum"];
            /** @description At most MEMORY_MAX_PAGE_SIZE. */
            top_k?: number;
            /** Format: double */
            min_similarity?: number;
            /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
            vector_fetch_limit?: number;
            /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
            cross_session_trigger?: number;
            /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
            candidate_limit?: number;
            /** @description false: answer the ranking's own order even when the tenant configures a reranker (MEMORY_RERANK_URL). Default: rerank when one is configured. */
            rerank?: boolean | null;
        };
        /**
         * @description * `auto` - auto
         *     * `conversation` - conversation
         *     * `user` - user
         * @enum {string}
         */
        SearchBodyScopeEnum: "auto" | "conversation" | "user";
        SearchCoverage: {
            /** @description The model whose vectors are counted; null: the tenant searches by words only. */
            embedding_model: string | null;
            /** @description Persisted messages search reads: user and assistant messages with content (tool and system messages, and empty ones, are never embedded). */
            messages: number;
            /** @description Of those, the ones with a vector under embedding_model. */
            embedded: number;
            /** @description Persisted, waiting for their vector: found by their words already, by meaning once embedded. */
            not_embedded: number;
            /** @description Messages acknowledged (201) that no worker has persisted yet, any role: not searchable at all yet. Null when the cache does not answer. */
            pending_persist: number | null;
            /** @description There is something to search and every message appended so far is persisted and embedded: search covers the whole history. Poll until true after loading a history; reason says why it is false. */
            searchable: boolean;
            /** @description Null when searchable; else why not: pending_unknown: the cache does not answer, so the writes not persisted yet are unknown: ask again later; pending_persist: messages were acknowledged but not persisted yet: poll until they are; embedding_unavailable: persisted messages wait for their vector because the embedding server cannot give it now (embedding_waiting says why; found by their words already): they are embedded once it answers, so poll, slowly; not_embedded: persisted messages wait for their vector (found by their words already): poll until embedded; no_messages: there is nothing to search: no user or assistant message with content was appended (or every one was erased); append messages before polling. */
            reason: string | null;
            /**
             * Format: date-time
             * @description When the oldest message still waiting for its vector was persisted.
             */
            oldest_not_embedded_at: string | null;
            /** @description Why messages wait for their vector beyond the worker's pace: the embedding server failed and is asked again in some seconds, or its configuration cannot work (what to set). Null: nothing stops them. */
            embedding_waiting: string | null;
        };
        /** @description Which messages a search ranks; AND across fields, OR within a list. */
        SearchFiltersRequest: {
            /**
             * Format: date-time
             * @description Messages created at or after this time.
             */
            start_date?: string;
            /**
             * Format: date-time
             * @description Messages created at or before this time.
             */
            end_date?: string;
            /** @description user and/or assistant. */
            role?: string[];
            /** @description The message's name (metadata name, or the LangChain message's name). At most 50 values of at most 200 characters. */
            name?: string[];
            /** @description The conversation's agent_id. At most 50 values of at most 200 characters. */
            agent_id?: string[];
            /** @description Only these conversations of the scope (never another user's or tenant's). At most 50 values of at most 200 characters. */
            conversation_id?: string[];
            /** @description Equality or "in" on top-level keys of the message's metadata: {"topic": "travel", "lang": {"in": ["en", "es"]}}. At most 10 keys, 50 values a key. */
            metadata?: {
                [key: string]: unknown;
            };
        };
        SearchHit: {
            message_id: string;
            conversation_id: string;
            seq: number;
            role: string;
            content: string;
            /** Format: date-time */
            created_at: string;
            metadata: unknown;
            /**
             * Format: double
             * @description Cosine similarity with the query, if embedded.
             */
            similarity: number | null;
            /**
             * Format: double
             * @description BM25 score, if the message shares terms with the query.
             */
            keyword_score: number | null;
            /**
             * Format: double
             * @description What the ranking orders the hits by (the fused rank score in hybrid mode); when reranked is true the order is the reranker's instead.
             */
            score: number;
        };
        SearchOut: {
            query: string;
            mode: string;
            scope: string;
            /** @description Conversations searched. */
            conversations: number;
            /** @description Messages the ranking considered. */
            candidates: number;
            embedding_model: string;
            query_embedding_dim: number | null;
            results: components["schemas"]["SearchHit"][];
            /** @description True only when the results are in the reranker's order (the tenant configures one, the request did not send rerank=false, and it answered). */
            reranked: boolean;
            /** @description The reranker of this search (its model, else its format), answered or not; null when none is configured or the request sent rerank=false. */
            rerank_model: string | null;
            /** @description What this answer could not do as configured, each with a code and a sentence (empty: nothing): the results are still the best order the service could give, e.g. ranked by words alone while the embedding server does not answer (query_not_embedded), or in the ranking's order while the reranker fails (rerank_failed) or is not called after a failure (rerank_unavailable). */
            notices: components["schemas"]["Notice"][];
        };
        /**
         * @description * `cache` - cache
         *     * `rebuild` - rebuild
         *     * `database` - database
         * @enum {string}
         */
        SourceEnum: "cache" | "rebuild" | "database";
        StatusOut: {
            /**
             * @description Whose figures these are.
             *
             *     * `tenant` - tenant
             *     * `deployment` - deployment
             */
            scope: components["schemas"]["StatusOutScopeEnum"];
            /** @description scope tenant: the API key's tenant. */
            tenant?: string;
            /** @description Every backend answers. */
            ok: boolean;
            database: components["schemas"]["BackendStatus"];
            cache: components["schemas"]["BackendStatus"];
            /** @description ok; for operators also the queues, their depths and consumers. */
            broker: {
                [key: string]: unknown;
            };
            /** @description Cache lookups and hit rates: the tenant's own, or (operators) every tenant's. */
            metrics: {
                [key: string]: unknown;
            };
            /** @description using_pg, using_redis, using_broker, degraded, fallback_sessions. */
            flags: {
                [key: string]: unknown;
            };
        };
        /**
         * @description * `tenant` - tenant
         *     * `deployment` - deployment
         * @enum {string}
         */
        StatusOutScopeEnum: "tenant" | "deployment";
        StoreBatchInRequest: {
            /** @description Each operation is an object with "op": "get" (namespace, key, refresh_ttl), "search" (namespace_prefix, query, filter, limit, offset, refresh_ttl), "put" (namespace, key, value, index, ttl; a null value deletes), "delete" (namespace, key) or "list_namespaces" (prefix, suffix or match_conditions, max_depth, limit, offset). */
            operations: {
                [key: string]: unknown;
            }[];
        };
        StoreBatchOut: {
            /** @description One per operation, in order: an item or null (get), items with scores (search), null (put, delete), namespaces as arrays (list_namespaces). */
            results: unknown[];
        };
        StoreItemOut: {
            namespace: string[];
            key: string;
            value: {
                [key: string]: unknown;
            };
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /**
             * Format: date-time
             * @description When the item expires; null: never.
             */
            expires_at: string | null;
        };
        StoreNamespacesOut: {
            namespaces: string[][];
        };
        StorePutInRequest: {
            /** @description The item's namespace, e.g. ["users", "42"]. */
            namespace: string[];
            key: string;
            /** @description A JSON object. */
            value: {
                [key: string]: unknown;
            };
            /** @description false, null (the whole value) or field paths to search by. */
            index?: unknown;
            /**
             * Format: double
             * @description Minutes to live; null: never expires.
             */
            ttl?: number | null;
        };
        StoreSearchInRequest: {
            namespace_prefix?: string[];
            /** @description Ranks the items (hybrid search) when given. */
            query?: string | null;
            /** @description Value fields: a value or {$eq,$ne,$gt,...}. */
            filter?: {
                [key: string]: unknown;
            } | null;
            limit?: number;
            offset?: number;
            refresh_ttl?: boolean;
        };
        StoreSearchItemOut: {
            namespace: string[];
            key: string;
            value: {
                [key: string]: unknown;
            };
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /**
             * Format: date-time
             * @description When the item expires; null: never.
             */
            expires_at: string | null;
            /**
             * Format: double
             * @description The fused ranking score, best first; null without a query.
             */
            score: number | null;
        };
        StoreSearchOut: {
            items: components["schemas"]["StoreSearchItemOut"][];
        };
        SummaryCreatedOut: {
            text: string;
            /** @description The chat model that wrote it, or "rule_based". */
            model: string;
            /** @description Messages summarised. */
            message_count: number;
            /** @description The conversation's message pairs (user messages) when it was due. */
            pair_count: number;
            /** @description Seq of the first message summarised. */
            first_seq: number;
            /** @description Seq of the last message summarised. */
            last_seq: number;
            token_count: number;
            /** Format: date-time */
            created_at: string;
            conversation_id: string;
        };
        SummaryListOut: {
            conversation_id: string;
            /** @description Newest first. */
            summaries: components["schemas"]["SummaryOut"][];
        };
        SummaryOut: {
            text: string;
            /** @description The chat model that wrote it, or "rule_based". */
            model: string;
            /** @description Messages summarised. */
            message_count: number;
            /** @description The conversation's message pairs (user messages) when it was due. */
            pair_count: number;
            /** @description Seq of the first message summarised. */
            first_seq: number;
            /** @description Seq of the last message summarised. */
            last_seq: number;
            token_count: number;
            /** Format: date-time */
            created_at: string;
        };
        UsageDay: {
            /**
             * Format: date
             * @description The UTC day.
             */
            day: string;
            /** @description Messages stored that day (still stored). */
            messages: number;
            /** @description Search requests answered. */
            searches: number;
            /** @description Chat runs the model answered. */
            chat_runs: number;
            /** @description Model tokens, input and output: chat runs and memory extraction. */
            model_tokens: number;
            /** @description Size of the tenant's stored rows at the day's end (today: so far): messages, vectors, memory documents, store items, checkpoints, extracted memories. */
            storage_bytes: number;
            /** @description False for today, whose figures still grow. */
            complete: boolean;
        };
        UsageOut: {
            /** @description The API key's tenant. */
            tenant: string;
            days: number;
            /** @description The figures summed over the days (storage is not a sum: see today's). */
            totals: components["schemas"]["UsageTotals"];
            /** @description One entry per day, newest (today) first. */
            usage: components["schemas"]["UsageDay"][];
        };
        UsageTotals: {
            messages: number;
            searches: number;
            chat_runs: number;
            model_tokens: number;
        };
        UserEraseOut: {
            user_id: string;
            conversations_erased: number;
            messages_erased: number;
            embeddings_erased: number;
            summaries_erased: number;
            checkpoints_erased: number;
            /** @description Facts and their change history. */
            facts_erased: number;
            /** @description Memories extracted from their conversations (their history with them). */
            memories_erased: number;
            dead_letters_erased: number;
            cache_keys_erased: number;
        };
        /** @description The same search as a JSON body: lists as JSON arrays, ``metadata`` as a JSON object. */
        UserSearchBodyRequest: {
            /**
             * @description Rank the user's extracted memories with their turns, in one list (each result's kind says which): a turn rises with the memories read from it, a memory names the turns it was read from. Off: the turns alone, answered as without this parameter.
             * @default false
             */
            include_memories?: boolean;
            /**
             * @description With include_memories: also memories an update or delete took back (valid_to set).
             * @default false
             */
            include_past_memories?: boolean;
            /**
             * Format: date-time
             * @description Messages created at or after this time.
             */
            start_date?: string;
            /**
             * Format: date-time
             * @description Messages created at or before this time.
             */
            end_date?: string;
            /** @description user and/or assistant. */
            role?: string[];
            /** @description The message's name (metadata name, or the LangChain message's name). At most 50 values of at most 200 characters. */
            name?: string[];
            /** @description The conversation's agent_id. At most 50 values of at most 200 characters. */
            agent_id?: string[];
            /** @description Only these conversations of the scope (never another user's or tenant's). At most 50 values of at most 200 characters. */
            conversation_id?: string[];
            /** @description Equality or "in" on top-level keys of the message's metadata: {"topic": "travel", "lang": {"in": ["en", "es"]}}. At most 10 keys, 50 values a key. */
            metadata?: {
                [key: string]: unknown;
            };
            /** @description The words or question to search for (at most MEMORY_MAX_QUERY_CHARS). */
            q: string;
            /**
             * @description hybrid (default), semantic (vectors) or keyword.
             *
             *     * `hybrid` - hybrid
             *     * `semantic` - semantic
             *     * `keyword` - keyword
             */
            mode?: components["schemas"]["ModeEnum"];
            /**
             * @description auto: the conversation, and the user's others while it holds fewer than cross_session_trigger messages.
             *
             *     * `auto` - auto
             *     * `conversation` - conversation
             *     * `user` - user
             */
            scope?: components["schemas"]["SearchBodyScopeEnum"];
            /** @description At most MEMORY_MAX_PAGE_SIZE. */
            top_k?: number;
            /** Format: double */
            min_similarity?: number;
            /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
            vector_fetch_limit?: number;
            /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
            cross_session_trigger?: number;
            /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
            candidate_limit?: number;
            /** @description false: answer the ranking's own order even when the tenant configures a reranker (MEMORY_RERANK_URL). Default: rerank when one is configured. */
            rerank?: boolean | null;
        };
        UserSearchOut: components["schemas"]["SearchOut"] | components["schemas"]["FusedSearchOut"];
        UserSearchStatus: {
            /** @description The model whose vectors are counted; null: the tenant searches by words only. */
            embedding_model: string | null;
            /** @description Persisted messages search reads: user and assistant messages with content (tool and system messages, and empty ones, are never embedded). */
            messages: number;
            /** @description Of those, the ones with a vector under embedding_model. */
            embedded: number;
            /** @description Persisted, waiting for their vector: found by their words already, by meaning once embedded. */
            not_embedded: number;
            /** @description Messages acknowledged (201) that no worker has persisted yet, any role: not searchable at all yet. Null when the cache does not answer. */
            pending_persist: number | null;
            /** @description There is something to search and every message appended so far is persisted and embedded: search covers the whole history. Poll until true after loading a history; reason says why it is false. */
            searchable: boolean;
            /** @description Null when searchable; else why not: pending_unknown: the cache does not answer, so the writes not persisted yet are unknown: ask again later; pending_persist: messages were acknowledged but not persisted yet: poll until they are; embedding_unavailable: persisted messages wait for their vector because the embedding server cannot give it now (embedding_waiting says why; found by their words already): they are embedded once it answers, so poll, slowly; not_embedded: persisted messages wait for their vector (found by their words already): poll until embedded; no_messages: there is nothing to search: no user or assistant message with content was appended (or every one was erased); append messages before polling. */
            reason: string | null;
            /**
             * Format: date-time
             * @description When the oldest message still waiting for its vector was persisted.
             */
            oldest_not_embedded_at: string | null;
            /** @description Why messages wait for their vector beyond the worker's pace: the embedding server failed and is asked again in some seconds, or its configuration cannot work (what to set). Null: nothing stops them. */
            embedding_waiting: string | null;
            user_id: string;
        };
        WindowOut: {
            conversation_id: string;
            messages: components["schemas"]["MessageOut"][];
            count: number;
            /**
             * @description Where the window was read from.
             *
             *     * `cache` - cache
             *     * `rebuild` - rebuild
             *     * `database` - database
             */
            source: components["schemas"]["SourceEnum"];
        };
        WriteInRequest: {
            /** @description Negative for the special channels (error, interrupt, ...). */
            idx: number;
            channel: string;
            value: unknown;
        };
        WriteOut: {
            task_id: string;
            task_path: string;
            idx: number;
            channel: string;
            value: unknown;
        };
        WritesInRequest: {
            /** @default  */
            namespace?: string;
            task_id: string;
            /** @default  */
            task_path?: string;
            writes: components["schemas"]["WriteInRequest"][];
        };
        WritesOut: {
            conversation_id: string;
            checkpoint_id: string;
            namespace: string;
            written: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    conversations_list: {
        parameters: {
            query?: {
                agent_id?: string;
                archived?: boolean | null;
                /** @description Page size: default 50, at most MEMORY_MAX_PAGE_SIZE. */
                limit?: number;
                /** @description Items to skip: offset + limit at most 100 x MEMORY_MAX_PAGE_SIZE. */
                offset?: number;
                user_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationPage"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ConversationRequest"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Conversation"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_retrieve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConversationDetail"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_destroy: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EraseOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_partial_update: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["PatchedConversationUpdateRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Conversation"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_chat_create: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ChatInRequest"];
            };
        };
        responses: {
            /** @description The message_id was sent before and answered: the stored pair, the model not asked again. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChatOut"];
                    "text/event-stream": components["schemas"]["ChatEvent"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChatOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description run_active: another chat turn of this conversation is running (one at a time, so each answer follows its question); chat_in_progress: this message_id is being answered; retry after Retry-After. user_mismatch: the conversation belongs to another user (error.details: conversation_id, conversation_user_id, user_id). Nothing stored. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description chat_limit_reached: the tenant has MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT chat turns running; throttled: its MEMORY_RATE_LIMIT. Nothing stored; retry after Retry-After. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description model_error or egress_refused: the user's message stays stored. */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description chat_capacity: the web process's share of threads for chats is in use (nothing stored); chat_model_not_configured, chat_model_unavailable, provider_credential_missing, service_unavailable. Retry after Retry-After. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description model_timeout: no answer within MEMORY_CHAT_TIMEOUT; the user's message stays stored. */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_checkpoints_list: {
        parameters: {
            query?: {
                /** @description Only checkpoints saved before this checkpoint id. */
                before?: string;
                /** @description Default 100. */
                limit?: number;
                /** @description Only this namespace; every namespace when absent. */
                namespace?: string;
            };
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointListOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_checkpoints_save: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CheckpointInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointOut"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_checkpoints_delete: {
        parameters: {
            query?: {
                /** @description Only this namespace; every namespace when absent. */
                namespace?: string;
            };
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointsDeleteOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_checkpoints_retrieve: {
        parameters: {
            query?: {
                /** @description The graph namespace; "" (the root graph) when absent. */
                namespace?: string;
            };
            header?: never;
            path: {
                checkpoint_id: string;
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_checkpoints_writes_save: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                checkpoint_id: string;
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WritesInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WritesOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_checkpoints_latest: {
        parameters: {
            query?: {
                /** @description The graph namespace; "" (the root graph) when absent. */
                namespace?: string;
            };
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_context_create: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["ContextInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContextOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_memory_retrieve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryDocument"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_memory_update: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["MemoryDocumentRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryDocument"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description error.code user_mismatch: metadata.user_id names a user other than the conversation's (error.details: conversation_id, conversation_user_id, user_id); nothing stored */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_messages_window: {
        parameters: {
            query?: {
                end_date?: string;
                include_archived?: boolean;
                limit?: number;
                /**
                 * @description * `user` - User
                 *     * `assistant` - Assistant
                 *     * `system` - System
                 *     * `tool` - Tool
                 */
                role?: "user" | "assistant" | "system" | "tool";
                skip?: number;
                start_date?: string;
            };
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WindowOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_messages_create: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["AppendRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AppendOut"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AppendOut"];
                };
            };
            /** @description error.code validation_error or limit_exceeded, naming the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description error.code conflict: a message id holds other content; user_mismatch: the conversation belongs to another user (error.details: conversation_id, conversation_user_id, user_id), nothing stored */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description error.code broker_unavailable, write_indeterminate, idempotency_unknown, ... */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_messages_clear: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EraseOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_messages_retrieve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
                message_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessageOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_search_retrieve: {
        parameters: {
            query: {
                /** @description The conversation's agent_id. At most 50 values of at most 200 characters. */
                agent_id?: string[];
                /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
                candidate_limit?: number;
                /** @description Only these conversations of the scope (never another user's or tenant's). At most 50 values of at most 200 characters. */
                conversation_id?: string[];
                /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
                cross_session_trigger?: number;
                /** @description Messages created at or before this time. */
                end_date?: string;
                /** @description URL-encoded JSON. Equality or "in" on top-level keys of the message's metadata: {"topic": "travel", "lang": {"in": ["en", "es"]}}. At most 10 keys, 50 values a key. */
                metadata?: string;
                min_similarity?: number;
                /**
                 * @description hybrid (default), semantic (vectors) or keyword.
                 *
                 *     * `hybrid` - hybrid
                 *     * `semantic` - semantic
                 *     * `keyword` - keyword
                 */
                mode?: "hybrid" | "semantic" | "keyword";
                /** @description The message's name (metadata name, or the LangChain message's name). At most 50 values of at most 200 characters. */
                name?: string[];
                /** @description The words or question to search for (at most MEMORY_MAX_QUERY_CHARS). */
                q: string;
                /** @description false: answer the ranking's own order even when the tenant configures a reranker (MEMORY_RERANK_URL). Default: rerank when one is configured. */
                rerank?: boolean | null;
                /** @description user and/or assistant. */
                role?: string[];
                /**
                 * @description auto: the conversation, and the user's others while it holds fewer than cross_session_trigger messages.
                 *
                 *     * `auto` - auto
                 *     * `conversation` - conversation
                 *     * `user` - user
                 */
                scope?: "auto" | "conversation" | "user";
                /** @description Messages created at or after this time. */
                start_date?: string;
                /** @description At most MEMORY_MAX_PAGE_SIZE. */
                top_k?: number;
                /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
                vector_fetch_limit?: number;
            };
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_search_create: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SearchBodyRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_summaries_list: {
        parameters: {
            query?: {
                /** @description Default 20, at most MEMORY_MAX_PAGE_SIZE. */
                limit?: number;
            };
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SummaryListOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    conversations_summaries_create: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SummaryCreatedOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_conversations_window_retrieve: {
        parameters: {
            query?: {
                /**
                 * @description * `openai` - OpenAI chat messages: role, content, tool_calls, tool_call_id
                 *     * `langchain` - LangChain message dicts
                 */
                format?: "openai" | "langchain";
                /** @description Default MEMORY_MAX_TURNS_PROMPT. */
                limit?: number;
            };
            header?: never;
            path: {
                conversation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LlmWindowOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_status_retrieve: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatusOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    store_batch: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["StoreBatchInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StoreBatchOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    store_item_retrieve: {
        parameters: {
            query: {
                key: string;
                /** @description One per label, in order. */
                namespace: string[];
                /** @description Start its TTL again (default true). */
                refresh_ttl?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StoreItemOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    store_item_put: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["StorePutInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StoreItemOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    store_item_delete: {
        parameters: {
            query: {
                key: string;
                /** @description One per label, in order. */
                namespace: string[];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No response body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    store_namespaces_list: {
        parameters: {
            query?: {
                limit?: number;
                max_depth?: number;
                offset?: number;
                /** @description Repeat per label; "*" is any. */
                prefix?: string[];
                /** @description Repeat per label; "*" is any. */
                suffix?: string[];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StoreNamespacesOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    store_search: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["StoreSearchInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StoreSearchOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    usage_list: {
        parameters: {
            query?: {
                /** @description UTC days back from today, today included: default 30, at most 366. */
                days?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UsageOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_users_destroy: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserEraseOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_facts_list: {
        parameters: {
            query?: {
                /** @description At most this many facts; all when absent. */
                limit?: number;
            };
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactListOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_facts_set: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["FactsInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactsWrittenOut"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactsWrittenOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_fact_retrieve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key: string;
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_fact_set: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key: string;
                user_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FactValueInRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactOut"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_fact_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key: string;
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No response body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_fact_history: {
        parameters: {
            query?: {
                /** @description Page size: default 50, at most MEMORY_MAX_PAGE_SIZE. */
                limit?: number;
                /** @description Items to skip: offset + limit at most 100 x MEMORY_MAX_PAGE_SIZE. */
                offset?: number;
            };
            header?: never;
            path: {
                key: string;
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactHistoryPageOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_facts_history: {
        parameters: {
            query?: {
                /** @description Page size: default 50, at most MEMORY_MAX_PAGE_SIZE. */
                limit?: number;
                /** @description Items to skip: offset + limit at most 100 x MEMORY_MAX_PAGE_SIZE. */
                offset?: number;
            };
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FactHistoryPageOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_memories_list: {
        parameters: {
            query?: {
                /** @description Only memories read from these conversations of the user (repeat the parameter for several). */
                conversation_id?: string[];
                /** @description Only memories holding from this time or before. */
                end_date?: string;
                /** @description Also memories an update or delete took back (valid_to set): the versions an update replaced, each with version_of naming the memory that holds on. */
                include_past?: boolean;
                /**
                 * @description Only memories of this kind.
                 *
                 *     * `fact` - fact
                 *     * `preference` - preference
                 *     * `event` - event
                 *     * `relation` - relation
                 */
                kind?: "fact" | "preference" | "event" | "relation";
                /** @description Page size: default 50, at most MEMORY_MAX_PAGE_SIZE. */
                limit?: number;
                /** @description Items to skip: offset + limit at most 100 x MEMORY_MAX_PAGE_SIZE. */
                offset?: number;
                /** @description Rank by this text (hybrid search); top_k hits. */
                query?: string;
                /** @description With a query, false answers the ranking's own order even when the tenant configures a reranker (MEMORY_RERANK_URL). Default: rerank when one is configured. */
                rerank?: boolean | null;
                /** @description Only memories holding from this time on (ISO 8601). */
                start_date?: string;
                /** @description Only memories about this subject (case aside). */
                subject?: string;
                /** @description Hits of a query: default MEMORY_TOP_K. */
                top_k?: number;
                /** @description Only memories that held at this time (ISO 8601): what was true then, past versions included. */
                valid_at?: string;
            };
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryListOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_memories_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryDetailOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_memories_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No response body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    users_memories_correct: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["PatchedMemoryCorrectionRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryDetailOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_users_search_retrieve: {
        parameters: {
            query: {
                /** @description The conversation's agent_id. At most 50 values of at most 200 characters. */
                agent_id?: string[];
                /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
                candidate_limit?: number;
                /** @description Only these conversations of the scope (never another user's or tenant's). At most 50 values of at most 200 characters. */
                conversation_id?: string[];
                /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
                cross_session_trigger?: number;
                /** @description Messages created at or before this time. */
                end_date?: string;
                /** @description Rank the user's extracted memories with their turns, in one list (each result's kind says which): a turn rises with the memories read from it, a memory names the turns it was read from. Off: the turns alone, answered as without this parameter. */
                include_memories?: boolean;
                /** @description With include_memories: also memories an update or delete took back (valid_to set). */
                include_past_memories?: boolean;
                /** @description URL-encoded JSON. Equality or "in" on top-level keys of the message's metadata: {"topic": "travel", "lang": {"in": ["en", "es"]}}. At most 10 keys, 50 values a key. */
                metadata?: string;
                min_similarity?: number;
                /**
                 * @description hybrid (default), semantic (vectors) or keyword.
                 *
                 *     * `hybrid` - hybrid
                 *     * `semantic` - semantic
                 *     * `keyword` - keyword
                 */
                mode?: "hybrid" | "semantic" | "keyword";
                /** @description The message's name (metadata name, or the LangChain message's name). At most 50 values of at most 200 characters. */
                name?: string[];
                /** @description The words or question to search for (at most MEMORY_MAX_QUERY_CHARS). */
                q: string;
                /** @description false: answer the ranking's own order even when the tenant configures a reranker (MEMORY_RERANK_URL). Default: rerank when one is configured. */
                rerank?: boolean | null;
                /** @description user and/or assistant. */
                role?: string[];
                /**
                 * @description auto: the conversation, and the user's others while it holds fewer than cross_session_trigger messages.
                 *
                 *     * `auto` - auto
                 *     * `conversation` - conversation
                 *     * `user` - user
                 */
                scope?: "auto" | "conversation" | "user";
                /** @description Messages created at or after this time. */
                start_date?: string;
                /** @description At most MEMORY_MAX_PAGE_SIZE. */
                top_k?: number;
                /** @description At most MEMORY_MAX_SEARCH_CANDIDATES. */
                vector_fetch_limit?: number;
            };
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserSearchOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_users_search_create: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UserSearchBodyRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserSearchOut"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description unsupported_media_type: send Content-Type: application/json. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
    v1_users_search_status_retrieve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserSearchStatus"];
                };
            };
            /** @description validation_error, parse_error or limit_exceeded: error.message and error.details name the field (and, for a limit, the bound and its setting). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description not_found: no such resource for this tenant, or no such endpoint. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description method_not_allowed: the path does not take this method (the Allow header lists those it takes). */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH. */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description server_error: the service failed; the request is logged. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
            /** @description service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorDocument"];
                };
            };
        };
    };
}
