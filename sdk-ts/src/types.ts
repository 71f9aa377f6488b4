/**
 * Names for the API's shapes, all derived from the generated `schema.d.ts`: when the
 * gateway declares a response model, regenerating the schema types these names too,
 * with no edit here. Until it does, an answer is a free-form JSON object.
 */

import type { ItemOf } from "./pagination.js";
import type { paths } from "./schema.js";

/** The JSON body an operation answers on success (200, else 201). */
export type JsonAnswer<Operation> = Operation extends { responses: infer Responses }
  ? Responses extends { 200: { content: { "application/json": infer Body } } }
    ? Body
    : Responses extends { 201: { content: { "application/json": infer Body } } }
      ? Body
      : never
  : never;

/** The query parameters an operation takes. */
export type QueryOf<Operation> = Operation extends { parameters: { query?: infer Query } }
  ? NonNullable<Query>
  : never;

/** The JSON body an operation takes. */
export type JsonBody<Operation> = Operation extends {
  requestBody?: { content: { "application/json": infer Body } };
}
  ? Body
  : never;

/** What `POST /v1/runs` takes: `request`, or `benchmark` (+ `subset`, `impl`), or `replay`. */
export type LaunchBody = JsonBody<paths["/v1/runs"]["post"]>;
/** What every run answer carries, whatever else the schema declares. */
export interface RunCore {
  id: string;
  /** `running`, then `ok` or `error`; absent only when a `fields` read left it out. */
  status?: string | null;
}

/** One run, as `GET /v1/runs/{run_id}` answers it. */
export type Run = JsonAnswer<paths["/v1/runs/{run_id}"]["get"]> & RunCore;
/** One page of `GET /v1/runs`. */
export type RunPage = JsonAnswer<paths["/v1/runs"]["get"]>;
/** A row of `GET /v1/runs`. */
export type RunListItem = ItemOf<RunPage> & RunCore;
export type RunListQuery = QueryOf<paths["/v1/runs"]["get"]>;
export type RunGetQuery = QueryOf<paths["/v1/runs/{run_id}"]["get"]>;
/** One page of a run's task rows, with the `summary` of the whole sweep. */
export type TaskPage = JsonAnswer<paths["/v1/runs/{run_id}/tasks"]["get"]>;
/** One slim task row. */
export type TaskRow = ItemOf<TaskPage>;
export type TaskQuery = QueryOf<paths["/v1/runs/{run_id}/tasks"]["get"]>;
/** One page of a run's event log. */
export type EventPage = JsonAnswer<paths["/v1/runs/{run_id}/events"]["get"]>;
export type EventQuery = QueryOf<paths["/v1/runs/{run_id}/events"]["get"]>;
/** What the run's export can be written as. */
export type ExportFormat = NonNullable<QueryOf<paths["/v1/runs/{run_id}/export"]["get"]>["format"]>;

/** What every event of a run's log carries, whatever its type. */
export interface RunEventCore {
  run_id: string;
  seq: number;
  type: string;
  data?: Record<string, unknown> | null;
}

/** One entry of a run's log: the same events `events()` pages and `stream()` follows live. */
export type RunEvent = ItemOf<EventPage> & RunEventCore;
