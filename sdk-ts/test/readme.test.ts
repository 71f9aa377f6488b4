/** The README's examples, compiled with the tests so they keep type-checking; the live
 * behaviour they show is `platform.test.ts`'s. */

import { test } from "node:test";

import { BadRequestError, Benchwright } from "../src/index.js";

export async function readmeExamples(bw: Benchwright): Promise<void> {
  const run = await bw.runs.launch({
    benchmark: "GSM8K",
    sut: { model: "qwen/qwen3-32b", provider: "openrouter" },
    metadata: { limit: 50 },
  });
  for await (const event of bw.runs.stream(run.id)) {
    console.log(event.seq, event.type);
  }
  const done = await bw.runs.wait(run.id, { timeoutMs: 30 * 60_000 });
  console.log(done.status);

  const page = await bw.runs.tasks(run.id, { passed: false, limit: 100 });
  console.log(page.summary, page.next_page_token);
  for await (const row of bw.runs.iterTasks(run.id, { passed: false })) {
    console.log(row.task_id, row.score);
  }
  for await (const r of bw.runs.iterate({ status: "ok" })) console.log(r.id);
  const jsonl = new TextDecoder().decode(await bw.runs.export(run.id, "jsonl"));
  console.log(jsonl);

  try {
    await bw.runs.launch({ benchmark: "GSM8K", metadata: { limit: 0 } });
  } catch (error) {
    if (error instanceof BadRequestError) console.log(error.field, error.code);
    else throw error;
  }

  const { data: balance } = await bw.api.GET("/v1/billing/balance");
  const { data: artifacts } = await bw.api.GET("/v1/runs/{run_id}/artifacts", {
    params: { path: { run_id: run.id } },
  });
  console.log(balance, artifacts);
}

test("the README's examples type-check", () => {
  // Compiling this file is the check; constructing a client proves the import works.
  new Benchwright({ apiKey: "bw_live_pat_example", baseUrl: "http://127.0.0.1:1" });
});
