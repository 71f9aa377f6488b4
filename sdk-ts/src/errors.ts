/**
 * The SDK's error tree, the same one the Python SDK raises (`benchwright/_errors.py`):
 *
 *     BenchwrightError
 *     ├── ConfigurationError          no token could be found
 *     ├── WaitTimeoutError            runs.wait gave up; the run carries on
 *     ├── APIConnectionError          the server could not be reached, or the connection broke
 *     │   └── APITimeoutError
 *     ├── APIResponseError            a success status with a body the SDK cannot read
 *     └── APIStatusError              a 4xx/5xx: the RFC 9457 problem document in `.problem`
 *         ├── BadRequestError                 400 (`field` names what is wrong)
 *         │   └── UnprocessableEntityError    422
 *         ├── AuthenticationError             401
 *         ├── PaymentRequiredError            402
 *         ├── PermissionDeniedError           403
 *         ├── NotFoundError                   404
 *         ├── ConflictError                   409
 *         ├── PreconditionFailedError         412
 *         ├── RateLimitError                  429
 *         └── InternalServerError             5xx
 *
 * One `catch (e) { if (e instanceof BenchwrightError) ... }` covers every failure.
 */

import type { components } from "./schema.js";

/** An RFC 9457 problem document as the gateway sends it (extra members kept). */
export type Problem = components["schemas"]["Problem"] & {
  errors?: ValidationIssue[];
  [member: string]: unknown;
};

/** One field a validation problem found at fault. */
export interface ValidationIssue {
  field: string;
  message: string;
}

/** Root of every error the Benchwright SDK throws. */
export class BenchwrightError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The client cannot be configured, e.g. no API token could be found. */
export class ConfigurationError extends BenchwrightError {}

/** `runs.wait` gave up before the run reached a terminal status; the run keeps running. */
export class WaitTimeoutError extends BenchwrightError {
  constructor(
    readonly runId: string,
    readonly timeoutMs: number,
    readonly lastStatus: string,
  ) {
    super(
      `run ${runId} still '${lastStatus}' after ${timeoutMs / 1000}s; it keeps running on the server`,
    );
  }
}

/** The server could not be reached or the connection broke mid-request. */
export class APIConnectionError extends BenchwrightError {}

/** The request timed out (or was aborted by its timeout signal) before an answer. */
export class APITimeoutError extends APIConnectionError {}

/** The server answered with a success status but a body the SDK cannot understand. */
export class APIResponseError extends BenchwrightError {}

/**
 * The server answered with a 4xx/5xx status. `problem` is the RFC 9457 body as sent
 * (synthesised from the status line when the server sent something else); `title`,
 * `detail`, `field` and `code` are shortcuts into it.
 */
export class APIStatusError extends BenchwrightError {
  readonly status: number;
  readonly problem: Problem;
  readonly title: string;
  readonly detail: string | undefined;
  readonly field: string | undefined;
  readonly code: string | undefined;
  /** Every field a validation problem found at fault (`field` and `detail` describe the first). */
  readonly errors: ValidationIssue[];
  /** The problem type URI (`about:blank` when absent, per RFC 9457). */
  readonly type: string;

  constructor(status: number, problem: Problem) {
    const title = stringOr(problem.title, reasonPhrase(status));
    const detail = stringOr(problem.detail, undefined);
    const field = stringOr(problem.field, undefined);
    super(formatMessage(title, detail, field));
    this.status = status;
    this.problem = problem;
    this.title = title;
    this.detail = detail;
    this.field = field;
    this.code = stringOr(problem.code, undefined);
    this.errors = Array.isArray(problem.errors) ? problem.errors.filter(isIssue) : [];
    this.type = stringOr(problem.type, "about:blank");
  }
}

/** 400 (or 422): the request was malformed or failed validation; `field` names what. */
export class BadRequestError extends APIStatusError {}

/** 422: well-formed, but the server cannot act on it (a `BadRequestError`). */
export class UnprocessableEntityError extends BadRequestError {}

/** 401: the token is missing, malformed, expired or revoked. */
export class AuthenticationError extends APIStatusError {}

/** 402: the account cannot pay for this (`code` `insufficient_balance`). */
export class PaymentRequiredError extends APIStatusError {}

/** 403: the token lacks a scope (`missing_scope`), or the call wants a login session. */
export class PermissionDeniedError extends APIStatusError {}

/** 404: the resource does not exist or is not visible to this token. */
export class NotFoundError extends APIStatusError {}

/** 409: conflicts with current state; `code` says which (`idempotency_key_reused`, `run_finished`...). */
export class ConflictError extends APIStatusError {}

/** 412: an `If-Match` did not hold: the thing changed since you read it. */
export class PreconditionFailedError extends APIStatusError {}

/** 429: too many requests. */
export class RateLimitError extends APIStatusError {}

/** 5xx: the server failed. */
export class InternalServerError extends APIStatusError {}

type StatusErrorClass = new (status: number, problem: Problem) => APIStatusError;

const BY_STATUS: ReadonlyMap<number, StatusErrorClass> = new Map<number, StatusErrorClass>([
  [400, BadRequestError],
  [401, AuthenticationError],
  [402, PaymentRequiredError],
  [403, PermissionDeniedError],
  [404, NotFoundError],
  [409, ConflictError],
  [412, PreconditionFailedError],
  [422, UnprocessableEntityError],
  [429, RateLimitError],
]);

/** The typed error for a failed answer, from its status and its (unread) body. */
export function errorFromStatus(status: number, body: string): APIStatusError {
  const ErrorClass =
    BY_STATUS.get(status) ?? (status >= 500 ? InternalServerError : APIStatusError);
  return new ErrorClass(status, problemOf(status, body));
}

/** The typed error for a failed `Response`; reads a clone, so the body stays readable. */
export async function errorFromResponse(response: Response): Promise<APIStatusError> {
  let body = "";
  try {
    body = await response.clone().text();
  } catch {
    // A body that breaks off still leaves the status line to report.
  }
  return errorFromStatus(response.status, body);
}

function problemOf(status: number, body: string): Problem {
  // Proxies and crashed workers answer with HTML or plain text: keep a snippet of it as
  // the detail instead of failing to parse, so the caller still sees something useful.
  try {
    const parsed: unknown = JSON.parse(body);
    if (isRecord(parsed)) {
      return { type: "about:blank", title: reasonPhrase(status), status, ...parsed };
    }
  } catch {
    // not JSON: fall through
  }
  const problem: Problem = { type: "about:blank", title: reasonPhrase(status), status };
  const text = body.trim();
  if (text) {
    problem.detail = text.slice(0, 500);
  }
  return problem;
}

function formatMessage(title: string, detail: string | undefined, field: string | undefined) {
  let message = title;
  if (detail && detail !== title) {
    message = `${message}: ${detail}`;
  }
  return field ? `${message} (field: ${field})` : message;
}

function stringOr<T extends string | undefined>(value: unknown, fallback: T): string | T {
  return value === undefined || value === null ? fallback : String(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isIssue(value: unknown): value is ValidationIssue {
  return isRecord(value) && typeof value.field === "string" && typeof value.message === "string";
}

const REASONS: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  412: "Precondition Failed",
  413: "Content Too Large",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

function reasonPhrase(status: number): string {
  return REASONS[status] ?? "HTTP error";
}
