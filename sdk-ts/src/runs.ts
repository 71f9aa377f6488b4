/** `bw.runs`: launch runs, wait for them, page their tasks, follow their events. */

import type { Client } from "openapi-fetch";

import {
  APIConnectionError,
  APIResponseError,
  BenchwrightError,
  WaitTimeoutError,
} from "./errors.js";
import { asPage, paginate } from "./pagination.js";
import { sleep } from "./retry.js";
import type { paths } from "./schema.js";
import { readServerSentEvents, type ServerSentEvent } from "./sse.js";
import type {
  EventPage,
  EventQuery,
  ExportFormat,
  LaunchBody,
  Run,
  RunEvent,
  RunGetQuery,
  RunListItem,
  RunListQuery,
  RunPage,
  TaskPage,
  TaskQuery,
  TaskRow,
} from "./types.js";

export interface RequestOptions {
  /** Cancels the request (or the wait, or the stream). */
  signal?: AbortSignal | undefined;
}

export interface LaunchOptions extends RequestOptions {
  /**
   * The same key answers the run it first launched, so retrying a launch never
   * launches (and bills) twice. Without one a fresh key is made for this call.
   */
  idempotencyKey?: string | undefined;
}

export interface WaitOptions extends RequestOptions {
  /** Give up (`WaitTimeoutError`) after this long; the run itself carries on. */
  timeoutMs?: number | undefined;
  /** Between two reads of the run; 2 s unless set. */
  pollIntervalMs?: number | undefined;
}

export interface StreamOptions extends RequestOptions {
  /** Reconnections in a row (resuming after the last event) before giving up; 2 unless set. */
  maxRetries?: number | undefined;
}

const RUN_PATH = "/v1/runs/{run_id}" as const;

/** Operations on runs; reach it as `new Benchwright().runs`. */
export class Runs {
  constructor(private readonly api: Client<paths>) {}

  /** Launch a run and return it as created (usually still `running`). */
  async launch(body: LaunchBody, options: LaunchOptions = {}): Promise<Run> {
    const key = options.idempotencyKey ?? crypto.randomUUID();
    const { data } = await this.api.POST("/v1/runs", {
      body,
      params: { header: { "idempotency-key": key } },
      signal: options.signal,
    });
    // Every run answer has an id and a status (`RunCore`), whatever the schema says.
    return answered(data, "runs.launch") as Run;
  }

  /** One run; `expand` adds `tasks_summary`, `artifacts`, `recent_events`, `blocked_hosts`. */
  async get(runId: string, query: RunGetQuery = {}, options: RequestOptions = {}): Promise<Run> {
    const { data } = await this.api.GET(RUN_PATH, {
      params: { path: { run_id: runId }, query },
      signal: options.signal,
    });
    return answered(data, "runs.get") as Run;
  }

  /** Read the run until it is no longer `running` (it is `ok` or `error`) and return it. */
  async wait(runId: string, options: WaitOptions = {}): Promise<Run> {
    const { timeoutMs, pollIntervalMs = 2000, signal } = options;
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    for (;;) {
      const run = await this.get(runId, {}, { signal });
      const status = statusOf(run);
      if (status !== undefined && status !== "running") {
        return run;
      }
      let delay = pollIntervalMs;
      if (deadline !== undefined && timeoutMs !== undefined) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) {
          throw new WaitTimeoutError(runId, timeoutMs, status ?? "unknown");
        }
        delay = Math.min(delay, remaining);
      }
      await sleep(delay, signal);
    }
  }

  /** One page of your runs; `next_page_token` fetches the next. */
  async list(query: RunListQuery = {}, options: RequestOptions = {}): Promise<RunPage> {
    const { data } = await this.api.GET("/v1/runs", { params: { query }, signal: options.signal });
    return answered(data, "runs.list");
  }

  /** Every run the listing holds, pages fetched as the loop needs them. */
  iterate(
    query: Omit<RunListQuery, "page_token"> = {},
    options: RequestOptions = {},
  ): AsyncGenerator<RunListItem, void, undefined> {
    return paginate(async (pageToken) =>
      asPage<RunListItem>(
        await this.list({ ...query, page_token: pageToken }, options),
        "runs.list",
      ),
    );
  }

  /** One page of the run's slim task rows plus the `summary` over all of them. */
  async tasks(
    runId: string,
    query: TaskQuery = {},
    options: RequestOptions = {},
  ): Promise<TaskPage> {
    const { data } = await this.api.GET("/v1/runs/{run_id}/tasks", {
      params: { path: { run_id: runId }, query },
      signal: options.signal,
    });
    return answered(data, "runs.tasks");
  }

  /** Every task row of the run (`limit` is the page size), pages fetched as needed. */
  iterTasks(
    runId: string,
    query: Omit<TaskQuery, "page_token"> = {},
    options: RequestOptions = {},
  ): AsyncGenerator<TaskRow, void, undefined> {
    return paginate(async (pageToken) =>
      asPage<TaskRow>(
        await this.tasks(runId, { ...query, page_token: pageToken }, options),
        "runs.tasks",
      ),
    );
  }

  /** One page of the run's event log, oldest first, after `after_seq` (`next_after_seq` goes on). */
  async events(
    runId: string,
    query: EventQuery = {},
    options: RequestOptions = {},
  ): Promise<EventPage> {
    const { data } = await this.api.GET("/v1/runs/{run_id}/events", {
      params: { path: { run_id: runId }, query },
      signal: options.signal,
    });
    return answered(data, "runs.events");
  }

  /**
   * The run's events live, from the start, until the run finishes (the server ends
   * the stream after the terminal event). A dropped connection is resumed after the
   * last event (`Last-Event-ID`) up to `maxRetries` times in a row; no event is
   * yielded twice.
   */
  async *stream(
    runId: string,
    options: StreamOptions = {},
  ): AsyncGenerator<RunEvent, void, undefined> {
    const { signal, maxRetries = 2 } = options;
    let lastSeq = -1;
    let failures = 0;
    for (;;) {
      try {
        const { data } = await this.api.GET("/v1/runs/{run_id}/stream", {
          params: {
            path: { run_id: runId },
            header: lastSeq >= 0 ? { "Last-Event-ID": lastSeq } : {},
          },
          headers: { Accept: "text/event-stream", "Cache-Control": "no-store" },
          parseAs: "stream",
          signal,
        });
        for await (const message of readServerSentEvents(answered(data, "runs.stream"))) {
          const event = runEventOf(runId, message);
          if (event !== undefined && event.seq > lastSeq) {
            lastSeq = event.seq;
            failures = 0;
            yield event;
          }
        }
        return;
      } catch (error) {
        const dropped = connectionFailure(error, signal);
        if (dropped === undefined || failures >= maxRetries) {
          throw dropped ?? error;
        }
        await sleep(500 * 2 ** failures, signal);
        failures += 1;
      }
    }
  }

  /**
   * The run's task results as a file: `jsonl` (one task a line), `csv`, `markdown`,
   * `lm-eval`, `lm-eval-samples`, `inspect` (an Inspect AI `.eval` log, a zip) or
   * `atif` (an agent run's trajectories in Harbor's ATIF, one JSON line per task and
   * trial).
   */
  async export(
    runId: string,
    format: ExportFormat = "jsonl",
    options: RequestOptions = {},
  ): Promise<Uint8Array> {
    const { data } = await this.api.GET("/v1/runs/{run_id}/export", {
      params: { path: { run_id: runId }, query: { format } },
      headers: { Accept: "*/*" },
      parseAs: "arrayBuffer",
      signal: options.signal,
    });
    return new Uint8Array(answered(data, "runs.export"));
  }
}

/** A success answer's body; the error middleware has already thrown for a failure. */
export function answered<T>(data: T | null | undefined, what: string): T {
  if (data === undefined || data === null) {
    throw new APIResponseError(`${what}: the server answered with an empty body`);
  }
  return data;
}

function statusOf(run: Run): string | undefined {
  return typeof run.status === "string" ? run.status : undefined;
}

/** One SSE message as a run event (`undefined` for one that is not an event). */
function runEventOf(runId: string, message: ServerSentEvent): RunEvent | undefined {
  if (!message.data.trim()) {
    return undefined;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(message.data);
  } catch (error) {
    throw new APIResponseError(
      `runs.stream: an event that is not JSON: ${message.data.slice(0, 200)}`,
      { cause: error },
    );
  }
  const event = payload as Partial<RunEvent> | null;
  if (event === null || typeof event !== "object") {
    return undefined;
  }
  if (typeof event.seq === "number" && typeof event.type === "string") {
    return { run_id: runId, ...event } as RunEvent;
  }
  return undefined;
}

/**
 * The connection error to retry on, when `error` is one: a fetch that failed or a
 * body that broke off. A caller's abort and the server's own answers are not.
 */
function connectionFailure(
  error: unknown,
  signal: AbortSignal | undefined,
): APIConnectionError | undefined {
  if (signal?.aborted) {
    return undefined;
  }
  if (error instanceof APIConnectionError) {
    return error;
  }
  if (error instanceof BenchwrightError) {
    return undefined;
  }
  if (error instanceof TypeError) {
    // Node's fetch breaks off a body with TypeError("terminated").
    return new APIConnectionError(`runs.stream: the connection broke: ${error.message}`, {
      cause: error,
    });
  }
  return undefined;
}
