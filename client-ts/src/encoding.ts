/**
 * What a request may carry. A body is sent as UTF-8 JSON, which has no NaN or Infinity (that
 * `JSON.stringify` would silently send as `null`) and cannot encode half of a UTF-16 surrogate pair.
 * A value no body can carry is refused before anything is sent, as the `BadRequest`
 * (`validation_error`) the service answers for it: `details.field` is its path in the body
 * (`messages[2].metadata.score`), `details.reason` the reason.
 */

import { BadRequest } from "./errors.js";
import { hasLoneSurrogate } from "./ids.js";

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const MAX_JSON_DEPTH = 100;

type Problem = readonly [reason: string, advice: string];
const HAS_SURROGATE: Problem = [
  "contains an unpaired UTF-16 surrogate",
  "send valid Unicode text (half of a surrogate pair alone is not a character; pair it or remove it)",
];
const NOT_FINITE: Problem = ["is not a finite number", 'send a finite number, null, or the value as a string such as "Infinity"'];
const TOO_DEEP: Problem = [
  `nests more than ${MAX_JSON_DEPTH} levels`,
  `flatten it to at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
];
const CONTAINS_ITSELF: Problem = ["contains itself", "send a value without a reference to itself"];
const NOT_JSON: Problem = [
  "is not a JSON value",
  "send an object, array, string, number, true, false or null (a date as an ISO 8601 string)",
];

/** The refusal of a value, worded as the service words its own 400 for it; nothing was sent. */
export function refusal(field: string, reason: string, advice: string): BadRequest {
  return new BadRequest(400, "validation_error", `${field} ${reason}; ${advice}.`, { field, reason });
}

/** `body` as the JSON text the service reads; a value JSON cannot carry throws {@link BadRequest}. */
export function encodeBody(body: unknown): string {
  const found = firstUnsendable(body);
  if (found !== null) throw refusal(found.field, ...found.problem);
  return JSON.stringify(body);
}

/** A query parameter is sent as UTF-8 too: a lone surrogate in one throws {@link BadRequest}. */
export function checkQueryValue(name: string, value: string): void {
  if (hasLoneSurrogate(value)) throw refusal(name, ...HAS_SURROGATE);
}

type PathStep = string | number;

/** The path of the first value (in document order) no JSON body can carry, and why; `null` when there is none. */
function firstUnsendable(body: unknown): { field: string; problem: Problem } | null {
  // A loop, not recursion: it must answer for a value nested beyond the stack.
  const pending: Array<{ value: unknown; path: PathStep[]; holders: ReadonlySet<object> }> = [
    { value: body, path: [], holders: new Set() },
  ];
  while (pending.length > 0) {
    const { value, path, holders } = pending.pop()!;
    const problem = problemOf(value, path.length, holders);
    if (problem !== null) return { field: pathText(path), problem };
    if (typeof value !== "object" || value === null || hasToJSON(value)) continue;
    const inside = new Set(holders).add(value);
    const children: Array<[PathStep, unknown]> = Array.isArray(value)
      ? value.map((child, index) => [index, child])
      : Object.entries(value).filter(([, child]) => child !== undefined && typeof child !== "function");
    for (const [key] of children) {
      if (typeof key === "string" && hasLoneSurrogate(key)) {
        return { field: pathText(path), problem: [`has a key that ${HAS_SURROGATE[0]}`, HAS_SURROGATE[1]] };
      }
    }
    for (const [key, child] of children.reverse()) pending.push({ value: child, path: [...path, key], holders: inside });
  }
  return null;
}

function problemOf(value: unknown, depth: number, holders: ReadonlySet<object>): Problem | null {
  switch (typeof value) {
    case "string":
      return hasLoneSurrogate(value) ? HAS_SURROGATE : null;
    case "number":
      return Number.isFinite(value) ? null : NOT_FINITE;
    case "boolean":
    case "undefined":
      return null;
    case "object":
      if (value === null || hasToJSON(value)) return null;
      if (holders.has(value)) return CONTAINS_ITSELF;
      if (depth > MAX_JSON_DEPTH) return TOO_DEEP;
      return null;
    default:
      return [`${NOT_JSON[0]} (${typeof value})`, NOT_JSON[1]];
  }
}

function hasToJSON(value: object): boolean {
  return typeof (value as { toJSON?: unknown }).toJSON === "function";
}

/** The keys and indexes of `path` from the top of the body: `value.items[3]`, `state["a b"]`. */
function pathText(path: readonly PathStep[]): string {
  const text = path
    .map((step) => (typeof step === "number" ? `[${step}]` : PLAIN_KEY.test(step) ? `.${step}` : `[${JSON.stringify(step.slice(0, 40))}]`))
    .join("");
  return text.replace(/^\./, "") || "body";
}
