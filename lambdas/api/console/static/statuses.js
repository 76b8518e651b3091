// The task statuses, as the API declares them in its OpenAPI document: read once at start, so the
// console keeps no list of its own.

import { api } from "./api.js";

// Only a paused task can be resumed: the document declares no set for that, so this one status is
// named here.
export const PAUSED = "paused";

/** Filled by `loadStatuses`:
 * - `listable`: what GET /tasks?status= accepts, every status that is not finished (so cancellable);
 * - `queued`: what GET /tasks lists unasked (its `x-queued-statuses`): due to run or running (so
 *   pausable, and watched);
 * - `finished`: the others, which nothing runs any more. */
export const STATUSES = { listable: [], queued: new Set(), finished: new Set() };

/** A schema with its `$ref` (`#/components/schemas/<name>`) followed. */
function resolved(document, schema) {
  const ref = schema?.$ref;
  return ref ? document.components.schemas[ref.slice(ref.lastIndexOf("/") + 1)] : schema;
}

function enumOf(document, schema, what) {
  const values = resolved(document, schema)?.enum;
  if (!Array.isArray(values)) throw new Error(`openapi.json: no enum for ${what}`);
  return values;
}

export async function loadStatuses() {
  const { data: document } = await api("GET", "/openapi.json");
  const list = document.paths["/tasks"].get;
  const filter = list.parameters.find((parameter) => parameter.name === "status");
  const queued = list["x-queued-statuses"];
  if (!Array.isArray(queued)) throw new Error("openapi.json: no x-queued-statuses on GET /tasks");
  const listable = enumOf(document, filter?.schema, "the status of GET /tasks");
  const task = document.paths["/tasks/{id}"].get.responses["200"].content["application/json"].schema;
  const all = enumOf(document, resolved(document, task).properties.status, "a task's status");
  STATUSES.listable = listable;
  STATUSES.queued = new Set(queued);
  STATUSES.finished = new Set(all.filter((status) => !listable.includes(status)));
}
