/**
 * The errors of the client: what the service answered, or that it did not answer.
 *
 * Every error is a {@link MemoryServiceError} carrying the service's stable error `code`
 * (`validation_error`, `limit_exceeded`, `not_found`, `conflict`, `throttled`, `write_indeterminate`...,
 * or `http_<status>` when the answer was not the service's JSON error), its `message`, `details` and
 * the seconds its `Retry-After` asked (`retryAfter`), thrown as the subclass of its status.
 */

export type ErrorDetails = Record<string, unknown>;

export class MemoryServiceError extends Error {
  // `message` is the service's own, as it words it; `code` and `status` say which error it is.
  /** The HTTP status; `null` when no answer came (see {@link Unreachable}). */
  readonly status: number | null;
  /** The service's error code, stable across versions. */
  readonly code: string;
  /** The per-field errors, or a limit's `field`, `size` and `limit`; `{}` when there are none. */
  readonly details: ErrorDetails;
  /** Seconds the service asked to wait before trying again (`Retry-After`), or `null`. */
  readonly retryAfter: number | null;

  constructor(
    status: number | null,
    code: string,
    message: string,
    details: ErrorDetails = {},
    retryAfter: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.details = details;
    this.retryAfter = retryAfter;
  }
}

/** 400: the request broke a rule (`validation_error`) or a limit (`limit_exceeded`); `details.field` names the field. */
export class BadRequest extends MemoryServiceError {}

/** 401: no API key, or one the service does not know (`authentication_failed`). */
export class Unauthorized extends MemoryServiceError {}

/** 403: the key may not do this (`permission_denied`). */
export class Forbidden extends MemoryServiceError {}

/** 404: the conversation, message, fact or checkpoint does not exist (or belongs to another tenant). */
export class NotFound extends MemoryServiceError {}

/** 409: a message id holding other content, a conversation that exists, a chat turn running. */
export class Conflict extends MemoryServiceError {}

/** 413: the body is over the service's size limit (`details.limit`). */
export class PayloadTooLarge extends MemoryServiceError {}

/** 429: the tenant's rate or concurrency limit; try again after `retryAfter` seconds. */
export class RateLimited extends MemoryServiceError {}

/** 503 after the retries (at once when no retry can help, such as `chat_model_not_configured`). */
export class ServiceUnavailable extends MemoryServiceError {}

/** No answer at all after the retries: refused or dropped connections, timeouts (`code` `"unreachable"`). */
export class Unreachable extends MemoryServiceError {}

type ErrorClass = new (
  status: number | null,
  code: string,
  message: string,
  details?: ErrorDetails,
  retryAfter?: number | null,
) => MemoryServiceError;

const ERROR_BY_STATUS: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  [400, BadRequest],
  [401, Unauthorized],
  [403, Forbidden],
  [404, NotFound],
  [409, Conflict],
  [413, PayloadTooLarge],
  [429, RateLimited],
  [503, ServiceUnavailable],
]);

/** The error of `status`, as the subclass of its status (any other status is the base class). */
export function errorOfStatus(
  status: number,
  code: string,
  message: string,
  details: ErrorDetails = {},
  retryAfter: number | null = null,
): MemoryServiceError {
  const kind = ERROR_BY_STATUS.get(status) ?? MemoryServiceError;
  return new kind(status, code, message, details, retryAfter);
}

/** The same error, of the same class, with another message and details. */
export function errorWith(error: MemoryServiceError, message: string, details: ErrorDetails): MemoryServiceError {
  const kind = error.constructor as ErrorClass;
  return new kind(error.status, error.code, message, details, error.retryAfter);
}

/** The service's error document `{"error": {"code", "message", "details"}}`, if `body` is one. */
export function serviceError(body: unknown): { code: string; message: string; details: ErrorDetails } | null {
  if (typeof body !== "object" || body === null) return null;
  const error = (body as { error?: unknown }).error;
  if (typeof error !== "object" || error === null) return null;
  const { code, message, details } = error as { code?: unknown; message?: unknown; details?: unknown };
  if (typeof code !== "string") return null;
  return {
    code,
    message: typeof message === "string" ? message : "",
    details: typeof details === "object" && details !== null ? (details as ErrorDetails) : {},
  };
}
