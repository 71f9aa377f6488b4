/**
 * The Benchwright TypeScript SDK.
 *
 *     import { Benchwright } from "@benchwright/sdk";
 *     const bw = new Benchwright(); // BW_PAT and BW_BASE_URL, or { apiKey, baseUrl }
 *     const run = await bw.runs.launch({ benchmark: "GSM8K", sut: { model: "qwen/qwen3-32b", provider: "openrouter" } });
 *     for await (const event of bw.runs.stream(run.id)) console.log(event.seq, event.type);
 */

export {
  Benchwright,
  VERSION,
  typedErrors,
  type BenchwrightApi,
  type BenchwrightOptions,
} from "./client.js";
export {
  DEFAULT_BASE_URL,
  ENV_BASE_URL,
  ENV_TOKEN,
  resolveConfig,
  type ClientConfig,
  type ConfigOptions,
} from "./config.js";
export {
  APIConnectionError,
  APIResponseError,
  APIStatusError,
  APITimeoutError,
  AuthenticationError,
  BadRequestError,
  BenchwrightError,
  ConfigurationError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  PreconditionFailedError,
  RateLimitError,
  UnprocessableEntityError,
  WaitTimeoutError,
  errorFromResponse,
  errorFromStatus,
  type Problem,
  type ValidationIssue,
} from "./errors.js";
export { asPage, paginate, type ItemOf, type Page } from "./pagination.js";
export { retryAfterMs, withRetries, type RetryOptions } from "./retry.js";
export {
  Runs,
  type LaunchOptions,
  type RequestOptions,
  type StreamOptions,
  type WaitOptions,
} from "./runs.js";
export type { components, operations, paths } from "./schema.js";
export { readServerSentEvents, type ServerSentEvent } from "./sse.js";
export type * from "./types.js";
