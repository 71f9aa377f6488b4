/**
 * The client: a typed `openapi-fetch` client over the generated schema (`bw.api`, every
 * operation of the API), with the token on every request and every failure thrown as
 * a typed `BenchwrightError`; and the hand-written conveniences on top (`bw.runs`).
 */

import createClient, { type Client, type Middleware } from "openapi-fetch";

import { resolveConfig, type ConfigOptions } from "./config.js";
import { APIConnectionError, APITimeoutError, errorFromResponse } from "./errors.js";
import { withRetries, type RetryOptions } from "./retry.js";
import { Runs } from "./runs.js";
import type { paths } from "./schema.js";

export const VERSION = "0.1.0";

export interface BenchwrightOptions extends ConfigOptions, RetryOptions {
  /** The `fetch` to send requests with (a test double, a proxy-aware one); the global one by default. */
  fetch?: ((input: Request) => Promise<Response>) | undefined;
  /** Headers added to every request. */
  headers?: Record<string, string> | undefined;
}

/** The raw typed client: `bw.api.GET("/v1/runs/{run_id}", { params: { path: { run_id } } })`. */
export type BenchwrightApi = Client<paths>;

export class Benchwright {
  /** Every operation of the API, typed from its OpenAPI; failures throw typed errors. */
  readonly api: BenchwrightApi;
  readonly runs: Runs;
  readonly baseUrl: string;

  constructor(options: BenchwrightOptions = {}) {
    const config = resolveConfig(options);
    this.baseUrl = config.baseUrl;
    this.api = createClient<paths>({
      baseUrl: config.baseUrl,
      fetch: withRetries(options.fetch ?? ((request) => globalThis.fetch(request)), options),
      headers: {
        Accept: "application/json",
        Authorization: `Bearer ${config.apiKey}`,
        "X-Benchwright-Client": `typescript/${VERSION}`,
        ...options.headers,
      },
    });
    this.api.use(typedErrors);
    this.runs = new Runs(this.api);
  }
}

/**
 * Throws the typed error of every failed answer (its problem document read), and
 * reports a request that never got one as `APIConnectionError`; so a call through
 * `bw.api` either returns its `data` or throws.
 */
export const typedErrors: Middleware = {
  async onResponse({ response }) {
    if (!response.ok) {
      throw await errorFromResponse(response);
    }
    return undefined;
  },
  onError({ error, request }) {
    const where = `${request.method} ${new URL(request.url).pathname}`;
    if (error instanceof Error && error.name === "TimeoutError") {
      return new APITimeoutError(`${where} timed out`, { cause: error });
    }
    if (error instanceof Error && error.name === "AbortError") {
      return undefined; // the caller's own abort: theirs to handle, as fetch throws it
    }
    const reason = error instanceof Error ? error.message : String(error);
    return new APIConnectionError(`${where}: could not reach the server (${reason})`, {
      cause: error,
    });
  },
};
