/**
 * The SDK against a running gateway: `tests/system/test_ts_sdk.py` starts the embedded
 * platform and a fake model, and runs this with `BW_PAT`, `BW_BASE_URL` and
 * `BW_TEST_MODEL_BASE_URL` set. A small pinned run (GSM8K, four tasks) is launched,
 * streamed while it runs, waited for, paged, exported; then bad input is refused.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  Benchwright,
  NotFoundError,
  type RunEvent,
} from "../src/index.js";

const modelBaseUrl = process.env.BW_TEST_MODEL_BASE_URL;
const skip = modelBaseUrl ? false : "needs a gateway: run tests/system/test_ts_sdk.py";
const TASKS = 4;

test("launch, stream, wait, page, export", { skip, timeout: 180_000 }, async () => {
  const bw = new Benchwright(); // BW_PAT and BW_BASE_URL, as a user would set them
  const launched = await bw.runs.launch({
    benchmark: "GSM8K",
    sut: { model: "fake", provider: "openai_compatible", api_base: modelBaseUrl ?? null },
    metadata: { limit: TASKS },
  });
  assert.ok(launched.id, "a launched run has an id");

  const streaming = collect(bw.runs.stream(launched.id));
  const done = await bw.runs.wait(launched.id, { timeoutMs: 150_000, pollIntervalMs: 250 });
  assert.equal(done.status, "ok", JSON.stringify(done));

  // The stream ends by itself after the terminal event, and holds the whole log.
  const streamed = await streaming;
  assert.equal(streamed.at(-1)?.type, "PipelineFinished");
  const seqs = streamed.map((event) => event.seq);
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
  );
  assert.equal(new Set(seqs).size, seqs.length);
  assert.ok(streamed.every((event) => event.run_id === launched.id));
  const paged = await bw.runs.events(launched.id, { limit: 1000 });
  const logged = (paged.data as RunEvent[]).map((event) => [event.seq, event.type]);
  assert.deepEqual(
    streamed.map((event) => [event.seq, event.type]),
    logged,
  );

  // A page at a time, one row a page: the iterator follows next_page_token to the end.
  const rows = await collect(bw.runs.iterTasks(launched.id, { limit: 1 }));
  assert.equal(rows.length, TASKS);
  const whole = await bw.runs.tasks(launched.id, { limit: 100 });
  assert.deepEqual(
    rows.map((row) => row.id),
    (whole.data as { id: string }[]).map((row) => row.id),
  );
  assert.equal(whole.next_page_token ?? null, null);
  const firstPage = await bw.runs.tasks(launched.id, { limit: 1 });
  assert.equal(typeof firstPage.next_page_token, "string");
  assert.ok(firstPage.summary, "a task page carries the summary of the whole sweep");

  // The run is in the listing, found by paging it too.
  let listed = false;
  for await (const run of bw.runs.iterate({ limit: 1 })) {
    if (run.id === launched.id) {
      listed = true;
      break;
    }
  }
  assert.ok(listed, "runs.iterate reached the run");

  const exported = new TextDecoder().decode(await bw.runs.export(launched.id, "jsonl"));
  const lines = exported
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { task_id?: unknown });
  assert.equal(lines.length, TASKS);
  assert.ok(lines.every((line) => typeof line.task_id === "string"));
});

test("bad input is a typed error naming its field", { skip }, async () => {
  const bw = new Benchwright();
  const launch = await bw.runs
    .launch({ benchmark: "GSM8K", metadata: { limit: 0 } })
    .catch((error: unknown) => error);
  assert.ok(launch instanceof BadRequestError, String(launch));
  assert.equal(launch.status, 400);
  assert.equal(launch.field, "metadata.limit");
  assert.equal(launch.code, "invalid_argument");
  assert.equal(launch.problem.status, 400);

  const page = await bw.runs.tasks("run_missing", { limit: 0 }).catch((error: unknown) => error);
  assert.ok(page instanceof BadRequestError, String(page));
  assert.equal(page.field, "limit");

  await assert.rejects(bw.runs.get("run_missing"), NotFoundError);
  const stranger = new Benchwright({ apiKey: "bw_live_pat_not-a-token" });
  await assert.rejects(stranger.runs.list(), AuthenticationError);
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
