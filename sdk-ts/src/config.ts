/**
 * Where the client finds its token and server, the way the Python SDK and the CLI do:
 * the explicit option first, then the environment (`BW_PAT`, `BW_BASE_URL`), then the
 * local default address of `benchwright up`.
 *
 * The SDK runs in browsers too, so the environment is read only where there is one;
 * the credentials file `benchwright up` writes is a Node-only nicety left to callers
 * (pass its `token` and `base_url` as options).
 */

import { ConfigurationError } from "./errors.js";

/** The gateway's default address for a local `benchwright up`. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8765";
export const ENV_TOKEN = "BW_PAT";
export const ENV_BASE_URL = "BW_BASE_URL";

export interface ConfigOptions {
  /** A personal access token (`bw_live_pat_…`); defaults to `$BW_PAT`. */
  apiKey?: string | undefined;
  /** The API's address; defaults to `$BW_BASE_URL`, then the local `benchwright up`. */
  baseUrl?: string | undefined;
}

export interface ClientConfig {
  apiKey: string;
  baseUrl: string;
}

/** Resolve the token and base URL; throws `ConfigurationError` when no token is found. */
export function resolveConfig(options: ConfigOptions = {}): ClientConfig {
  const env = environment();
  const apiKey = firstSet(options.apiKey, env[ENV_TOKEN]);
  if (apiKey === undefined) {
    throw new ConfigurationError(
      `no Benchwright API token: pass apiKey, or set ${ENV_TOKEN} ` +
        "(a token from the web UI, or the one `benchwright up` wrote to credentials.json)",
    );
  }
  const baseUrl = firstSet(options.baseUrl, env[ENV_BASE_URL]) ?? DEFAULT_BASE_URL;
  return { apiKey, baseUrl: baseUrl.replace(/\/+$/, "") };
}

function environment(): Record<string, string | undefined> {
  const host = globalThis as { process?: { env?: Record<string, string | undefined> } };
  return host.process?.env ?? {};
}

function firstSet(...candidates: (string | undefined)[]): string | undefined {
  for (const candidate of candidates) {
    const value = candidate?.trim();
    if (value) {
      return value;
    }
  }
  return undefined;
}
