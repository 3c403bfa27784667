/**
 * What the tests share: the live service they run against (`MEMORY_URL`, and API keys of two
 * tenants, `MEMORY_API_KEY` and `MEMORY_OTHER_API_KEY`, and the same service taking fewer items per
 * request, `MEMORY_SMALL_BATCH_URL`, or answering fewer per page, `MEMORY_SMALL_PAGE_URL`, which
 * tests/client_ts sets) and fresh ids.
 */

import { randomUUID } from "node:crypto";

import { MemoryClient, type ClientOptions } from "../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the tests run against a live service (tests/client_ts runs them).`);
  return value;
}

export const serviceUrl = required("MEMORY_URL");
export const apiKey = required("MEMORY_API_KEY");
export const otherApiKey = required("MEMORY_OTHER_API_KEY");

/** The same service through a web process that takes at most `smallBatch` items per request (its MEMORY_MAX_BATCH). */
export const smallBatchUrl = required("MEMORY_SMALL_BATCH_URL");
export const smallBatch = Number(required("MEMORY_SMALL_BATCH"));

/** The same service through a web process that answers at most `smallPage` items per page (its MEMORY_MAX_PAGE_SIZE). */
export const smallPageUrl = required("MEMORY_SMALL_PAGE_URL");
export const smallPage = Number(required("MEMORY_SMALL_PAGE"));

export function client(options: ClientOptions = {}): MemoryClient {
  return new MemoryClient(serviceUrl, apiKey, options);
}

export function otherClient(): MemoryClient {
  return new MemoryClient(serviceUrl, otherApiKey);
}

/** A conversation or user id no other test uses. */
export function freshId(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

/** `check()`'s answer once it is truthy, asking again for up to `seconds` (what a worker does in the background). */
export async function eventually<T>(check: () => Promise<T | undefined | false>, what: string, seconds = 60): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const found = await check();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`Waited ${seconds} s for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
