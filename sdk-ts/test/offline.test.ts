/**
 * The hand-written layer against a scripted `fetch`: what the SDK sends (token, keys,
 * resume points) and how it reads what comes back (problem documents, pages, event
 * streams, broken connections). The live gateway is `platform.test.ts`'s.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  Benchwright,
  ConfigurationError,
  InternalServerError,
  NotFoundError,
  WaitTimeoutError,
  readServerSentEvents,
  RateLimitError,
  resolveConfig,
  retryAfterMs,
  type RetryOptions,
} from "../src/index.js";

type Answer = Response | ((request: Request) => Response | Promise<Response>);

/** A `fetch` that answers from a script, in order, and keeps what it was sent. */
function scripted(...answers: Answer[]) {
  const sent: Request[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    sent.push(request);
    const next = answers.shift();
    assert.ok(next, `unexpected request ${request.method} ${request.url}`);
    return typeof next === "function" ? next(request) : next;
  };
  return { fetch, sent };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": status < 400 ? "application/json" : "application/problem+json" },
  });
}

/** A client on a scripted fetch; retrying is off unless a test turns it on. */
function client(
  fetch: (request: Request) => Promise<Response>,
  retries: RetryOptions = { maxRetries: 0 },
): Benchwright {
  return new Benchwright({
    apiKey: "bw_live_pat_test",
    baseUrl: "http://bw.test/",
    fetch,
    ...retries,
  });
}

function textStream(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("configuration", () => {
  test("a missing token is a ConfigurationError naming BW_PAT", () => {
    const saved = process.env.BW_PAT;
    delete process.env.BW_PAT;
    try {
      assert.throws(
        () => new Benchwright(),
        (e: unknown) => {
          assert.ok(e instanceof ConfigurationError);
          assert.match(e.message, /BW_PAT/);
          return true;
        },
      );
    } finally {
      if (saved !== undefined) process.env.BW_PAT = saved;
    }
  });

  test("options beat the environment; the base URL loses its trailing slash", () => {
    assert.deepEqual(resolveConfig({ apiKey: " k ", baseUrl: "http://x:1//" }), {
      apiKey: "k",
      baseUrl: "http://x:1",
    });
  });
});

describe("requests", () => {
  test("carry the token, and a launch carries a fresh idempotency key", async () => {
    const { fetch, sent } = scripted(json({ id: "run_1", status: "running" }, 201));
    const run = await client(fetch).runs.launch({ benchmark: "GSM8K" });
    assert.equal(run.id, "run_1");
    const [request] = sent;
    assert.ok(request);
    assert.equal(request.url, "http://bw.test/v1/runs");
    assert.equal(request.headers.get("authorization"), "Bearer bw_live_pat_test");
    assert.match(request.headers.get("idempotency-key") ?? "", /^[0-9a-f-]{36}$/);
    assert.deepEqual(await request.json(), { benchmark: "GSM8K" });
  });

  test("a given idempotency key is the one sent", async () => {
    const { fetch, sent } = scripted(json({ id: "run_1" }, 201));
    await client(fetch).runs.launch({ benchmark: "GSM8K" }, { idempotencyKey: "mine" });
    assert.equal(sent[0]?.headers.get("idempotency-key"), "mine");
  });
});

describe("errors", () => {
  test("a problem document becomes the typed error with its field and code", async () => {
    const problem = {
      type: "about:blank",
      title: "invalid request",
      status: 400,
      detail: "limit: Input should be greater than or equal to 1",
      field: "limit",
      code: "invalid_argument",
      errors: [{ field: "limit", message: "Input should be greater than or equal to 1" }],
    };
    const { fetch } = scripted(json(problem, 400));
    const error = await client(fetch)
      .runs.tasks("run_1", { limit: 0 })
      .catch((e: unknown) => e);
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.status, 400);
    assert.equal(error.field, "limit");
    assert.equal(error.code, "invalid_argument");
    assert.equal(error.title, "invalid request");
    assert.deepEqual(error.errors, problem.errors);
    assert.equal(error.message, `invalid request: ${problem.detail} (field: limit)`);
  });

  test("the raw typed client throws the same errors", async () => {
    const { fetch } = scripted(
      json({ type: "about:blank", title: "unauthorized", status: 401 }, 401),
    );
    await assert.rejects(client(fetch).api.GET("/v1/me"), AuthenticationError);
  });

  test("an HTML 502 keeps a snippet of the page as the detail", async () => {
    const { fetch } = scripted(new Response("<h1>bad gateway</h1>", { status: 502 }));
    const error = await client(fetch)
      .runs.get("run_1")
      .catch((e: unknown) => e);
    assert.ok(error instanceof InternalServerError);
    assert.equal(error.title, "Bad Gateway");
    assert.equal(error.detail, "<h1>bad gateway</h1>");
    assert.equal(error.code, undefined);
  });

  test("an unreachable server is an APIConnectionError", async () => {
    const fetch = async (): Promise<Response> => {
      throw new TypeError("fetch failed");
    };
    await assert.rejects(client(fetch).runs.get("run_1"), APIConnectionError);
  });
});

describe("retries", () => {
  const quick: RetryOptions = { maxRetries: 2, initialDelayMs: 1 };
  const unavailable = () =>
    json({ type: "about:blank", title: "service unavailable", status: 503 }, 503);

  test("a read that met a 503 is sent again", async () => {
    const { fetch, sent } = scripted(unavailable(), json({ id: "run_1", status: "ok" }));
    const run = await client(fetch, quick).runs.get("run_1");
    assert.equal(run.status, "ok");
    assert.equal(sent.length, 2);
  });

  test("a launch is repeated with the same idempotency key and body", async () => {
    const { fetch, sent } = scripted(unavailable(), json({ id: "run_1" }, 201));
    await client(fetch, quick).runs.launch({ benchmark: "GSM8K" });
    const keys = sent.map((request) => request.headers.get("idempotency-key"));
    assert.equal(keys.length, 2);
    assert.equal(keys[0], keys[1]);
    assert.deepEqual(await sent[1]?.json(), { benchmark: "GSM8K" });
  });

  test("a POST without a key is not repeated after a 5xx, only after a 429", async () => {
    const once = scripted(unavailable());
    await assert.rejects(
      client(once.fetch, quick).api.POST("/v1/runs/{run_id}/halt", {
        params: { path: { run_id: "run_1" } },
      }),
      InternalServerError,
    );
    assert.equal(once.sent.length, 1);
    const limited = () =>
      new Response(JSON.stringify({ title: "slow down", status: 429 }), {
        status: 429,
        headers: { "Retry-After": "0" },
      });
    const thrice = scripted(limited(), limited(), limited());
    const error = await client(thrice.fetch, quick)
      .api.POST("/v1/runs/{run_id}/halt", { params: { path: { run_id: "run_1" } } })
      .catch((e: unknown) => e);
    assert.ok(error instanceof RateLimitError);
    assert.equal(thrice.sent.length, 3, "the first attempt and two retries");
  });

  test("an unreachable server is tried again, then reported", async () => {
    let calls = 0;
    const fetch = async (): Promise<Response> => {
      calls += 1;
      throw new TypeError("fetch failed");
    };
    await assert.rejects(client(fetch, quick).runs.get("run_1"), APIConnectionError);
    assert.equal(calls, 3);
  });

  test("Retry-After is read as seconds or as a date", () => {
    assert.equal(retryAfterMs("2"), 2000);
    assert.equal(retryAfterMs(null), undefined);
    assert.equal(retryAfterMs(new Date(Date.now() - 1000).toUTCString()), 0);
  });
});

describe("pagination", () => {
  test("iterTasks follows next_page_token until the last page", async () => {
    const { fetch, sent } = scripted(
      json({ data: [{ id: "a" }, { id: "b" }], next_page_token: "t2", summary: {} }),
      json({ data: [{ id: "c" }], next_page_token: null, summary: {} }),
    );
    const rows = await collect(client(fetch).runs.iterTasks("run/1", { limit: 2, passed: false }));
    assert.deepEqual(
      rows.map((row) => row.id),
      ["a", "b", "c"],
    );
    const urls = sent.map((request) => new URL(request.url));
    assert.equal(urls[0]?.pathname, "/v1/runs/run%2F1/tasks");
    assert.equal(urls[0]?.searchParams.get("page_token"), null);
    assert.equal(urls[0]?.searchParams.get("passed"), "false");
    assert.equal(urls[1]?.searchParams.get("page_token"), "t2");
    assert.equal(urls[1]?.searchParams.get("limit"), "2");
  });
});

describe("waiting", () => {
  test("wait polls until the run is no longer running", async () => {
    const { fetch, sent } = scripted(
      json({ id: "run_1", status: "running" }),
      json({ id: "run_1", status: "ok" }),
    );
    const run = await client(fetch).runs.wait("run_1", { pollIntervalMs: 1 });
    assert.equal(run.status, "ok");
    assert.equal(sent.length, 2);
  });

  test("wait gives up with WaitTimeoutError naming the last status", async () => {
    const running = () => json({ id: "run_1", status: "running" });
    const { fetch } = scripted(running, running, running, running, running, running);
    const error = await client(fetch)
      .runs.wait("run_1", { timeoutMs: 5, pollIntervalMs: 2 })
      .catch((e: unknown) => e);
    assert.ok(error instanceof WaitTimeoutError);
    assert.equal(error.lastStatus, "running");
  });
});

describe("server-sent events", () => {
  test("messages split across chunks, CRLF and CR line ends, comments and multi-line data", async () => {
    const body = textStream(
      ": ping\r\n\r\nevent: Pha",
      'seStarted\r\nid: 1\r\ndata: {"a":\r',
      "\ndata: 1}\r\n\r\nid: 2\rdata: x\r\r",
      "data: cut off without its blank line",
    );
    assert.deepEqual(await collect(readServerSentEvents(body)), [
      { event: "PhaseStarted", data: '{"a":\n1}', id: "1" },
      { event: "message", data: "x", id: "2" },
    ]);
  });

  test("stream resumes after a dropped connection from the last event, yielding none twice", async () => {
    const event = (seq: number, type = "PhaseStarted") =>
      `event: ${type}\nid: ${seq}\ndata: ${JSON.stringify({ run_id: "run_1", seq, type, data: {} })}\n\n`;
    const encoder = new TextEncoder();
    // Two events, then the connection breaks (on the read after them: an error raised
    // at once would discard what was queued).
    let reads = 0;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (reads++ === 0) controller.enqueue(encoder.encode(event(0) + event(1)));
        else controller.error(new TypeError("terminated"));
      },
    });
    const { fetch, sent } = scripted(
      new Response(broken, { headers: { "Content-Type": "text/event-stream" } }),
      // A server that ignores Last-Event-ID and replays from the start.
      new Response(textStream(event(0), event(1), event(2, "PipelineFinished")), {
        headers: { "Content-Type": "text/event-stream" },
      }),
    );
    const events = await collect(client(fetch).runs.stream("run_1"));
    assert.deepEqual(
      events.map((e) => [e.seq, e.type]),
      [
        [0, "PhaseStarted"],
        [1, "PhaseStarted"],
        [2, "PipelineFinished"],
      ],
    );
    assert.equal(sent[0]?.headers.get("last-event-id"), null);
    assert.equal(sent[0]?.headers.get("accept"), "text/event-stream");
    assert.equal(sent[1]?.headers.get("last-event-id"), "1");
  });

  test("a stream refused with a problem document throws its typed error", async () => {
    const { fetch } = scripted(
      json({ type: "about:blank", title: "run not found", status: 404 }, 404),
    );
    await assert.rejects(collect(client(fetch).runs.stream("run_x")), NotFoundError);
  });
});
