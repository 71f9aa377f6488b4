/**
 * Retrying what is safe to repeat, the Python SDK's policy (`benchwright/_retry.py`):
 * a 429 or a 5xx (not 501) is tried again, up to `maxRetries` times, after the
 * server's `Retry-After` or an exponential backoff with jitter. Only requests that
 * cannot act twice are repeated: idempotent methods, and a POST carrying an
 * `Idempotency-Key` (the same key goes out on every attempt); a 429 is repeated
 * whatever the method, since the server turned it away unprocessed.
 */

const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
// A server asking for minutes is better surfaced as an error than waited out silently.
const MAX_RETRY_AFTER_MS = 60_000;

export interface RetryOptions {
  /** Attempts after the first; 2 unless set, 0 turns retrying off. */
  maxRetries?: number | undefined;
  /** The first backoff (doubling each attempt, up to `maxDelayMs`); 500 ms unless set. */
  initialDelayMs?: number | undefined;
  maxDelayMs?: number | undefined;
}

type Send = (request: Request) => Promise<Response>;

/** `send`, repeating a request that failed in a way worth another try. */
export function withRetries(send: Send, options: RetryOptions = {}): Send {
  const { maxRetries = 2, initialDelayMs = 500, maxDelayMs = 8_000 } = options;
  const backoff = (attempt: number) =>
    Math.min(maxDelayMs, initialDelayMs * 2 ** attempt) * (0.5 + Math.random() / 2);
  return async (request) => {
    const safe = IDEMPOTENT_METHODS.has(request.method) || request.headers.has("idempotency-key");
    for (let attempt = 0; ; attempt += 1) {
      let response: Response;
      try {
        // Each attempt sends a copy: a body can be read once.
        response = await send(attempt < maxRetries ? request.clone() : request);
      } catch (error) {
        if (!safe || attempt >= maxRetries || request.signal.aborted) {
          throw error;
        }
        await sleep(backoff(attempt), request.signal);
        continue;
      }
      const transient =
        response.status === 429 || (response.status >= 500 && response.status !== 501);
      if (!transient || attempt >= maxRetries || !(safe || response.status === 429)) {
        return response;
      }
      await response.body?.cancel();
      const asked = retryAfterMs(response.headers.get("retry-after"));
      await sleep(
        asked === undefined ? backoff(attempt) : Math.min(asked, MAX_RETRY_AFTER_MS),
        request.signal,
      );
    }
  };
}

/** A `Retry-After` (delta-seconds or HTTP-date) in milliseconds. */
export function retryAfterMs(value: string | null): number | undefined {
  if (!value?.trim()) {
    return undefined;
  }
  const seconds = Number(value);
  if (Number.isFinite(seconds)) {
    return Math.max(0, seconds * 1000);
  }
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, when - Date.now());
}

/** Wait `ms`, or reject with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
