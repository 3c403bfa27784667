/**
 * Identifiers: the conversation ids the service accepts, URL path segments, and the UUIDs this
 * client gives messages before their first attempt.
 */

import { randomUUID, getRandomValues } from "node:crypto";

/** The service's rule for conversation ids, and the longest it stores. */
export const CONVERSATION_ID_RULE =
  "letters, digits and . _ @ = + - (not starting with a symbol), at most 200 characters";
const CONVERSATION_ID = /^[A-Za-z0-9][A-Za-z0-9._@=+-]*$/;
const MAX_ID_LENGTH = 200;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The id, if the service could store it; else a `TypeError` naming the rule. */
export function checkConversationId(conversationId: string): string {
  if (typeof conversationId !== "string" || conversationId === "") {
    throw new TypeError(`A conversation id is required: ${CONVERSATION_ID_RULE}.`);
  }
  if (conversationId.length > MAX_ID_LENGTH || !CONVERSATION_ID.test(conversationId)) {
    throw new TypeError(
      `Invalid conversation id ${JSON.stringify(conversationId.slice(0, 60))}: a conversation id is ${CONVERSATION_ID_RULE}.`,
    );
  }
  return conversationId;
}

/** `value` checked as one URL path segment (a user id, a fact key, a memory id...); a `TypeError` when none can carry it. */
export function checkSegment(value: string, what: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(`A ${what} is required (not blank).`);
  }
  if (value.includes("/") || value === "." || value === "..") {
    throw new TypeError(`Invalid ${what} ${JSON.stringify(value.slice(0, 60))}: it must not contain "/" nor be "." or "..".`);
  }
  if (hasLoneSurrogate(value)) {
    throw new TypeError(`Invalid ${what}: it contains an unpaired UTF-16 surrogate, which no URL can carry.`);
  }
  return value;
}

export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/**
 * A new UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, the version, 74 random bits, the variant.
 *
 * The ids this client gives messages. After the service lost its record of writes in flight, an id
 * made after that is told new at once, where a UUIDv4 waits until the service proves no older write
 * is on its way.
 */
export function uuid7(now: number = Date.now()): string {
  const bytes = new Uint8Array(16);
  getRandomValues(bytes);
  let milliseconds = Math.floor(now);
  for (let index = 5; index >= 0; index--) {
    bytes[index] = milliseconds % 256;
    milliseconds = Math.floor(milliseconds / 256);
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A new random UUIDv4. */
export function uuid4(): string {
  return randomUUID();
}
