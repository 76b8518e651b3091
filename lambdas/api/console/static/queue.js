// The queue page: the queued tasks (GET /tasks, a page at a time, filtered here by action and text),
// and the create form (POST /tasks; with `dry_run=true` a preview of its next occurrences).

import { api } from "./api.js";
import {
  $, clearErrors, el, notify, occurrenceItem, show, showError, showKind, statusBadge, timeEl, timeFields,
} from "./dom.js";
import { describeSchedule, utc } from "./format.js";
import { STATUSES } from "./statuses.js";

const PAGE_SIZE = 50;

const queue = {
  items: [], // the loaded pages, in due order
  cursor: null, // next_cursor of the last loaded page
  loaded: false,
  generation: 0, // a newer load makes older answers stale
};

/** When a queued task runs next: its retry, else its due time. */
function runAt(task) {
  return task.next_attempt_at || task.due || "";
}

const runAtMs = (task) => Date.parse(runAt(task)) || 0;

function matchesFilters(task) {
  const action = $("filter-action").value;
  const text = $("filter-text").value.trim().toLowerCase();
  if (action && task.action !== action) return false;
  if (!text) return true;
  return task.id.toLowerCase().includes(text) || JSON.stringify(task.payload).toLowerCase().includes(text);
}

function refreshActionOptions() {
  const select = $("filter-action");
  const chosen = select.value;
  const actions = [...new Set(queue.items.map((task) => task.action))].sort();
  if (chosen && !actions.includes(chosen)) actions.push(chosen);
  const options = actions.map((action) => el("option", { value: action, text: action }));
  select.replaceChildren(el("option", { value: "", text: "any action" }), ...options);
  select.value = chosen;
  $("known-actions").replaceChildren(...actions.map((a) => el("option", { value: a })));
}

function taskRow(task) {
  const href = `#/tasks/${encodeURIComponent(task.id)}`;
  const link = el("a", { href, text: task.id, "data-testid": "task-link" });
  return el(
    "tr",
    { "data-testid": "task-row", "data-task-id": task.id },
    el("td", {}, link),
    el("td", { text: task.action, "data-testid": "task-action" }),
    el("td", {}, statusBadge(task.status, "task-status")),
    el("td", { text: describeSchedule(task), "data-testid": "task-schedule" }),
    el("td", {}, timeEl(runAt(task), { testid: "task-due" })),
    el("td", {}, timeEl(runAt(task), { mode: "relative", testid: "task-due-relative" })),
    el("td", { text: `${task.attempts} / ${task.max_attempts}`, "data-testid": "task-attempts" }),
  );
}

function renderQueue() {
  refreshActionOptions();
  const shown = queue.items.filter(matchesFilters);
  $("task-rows").replaceChildren(...shown.map(taskRow));
  show($("queue-empty"), queue.loaded && shown.length === 0);
  show($("load-more"), Boolean(queue.cursor));
  const more = queue.cursor ? " (more to load)" : "";
  $("queue-count").textContent = queue.loaded
    ? `${shown.length} shown of ${queue.items.length} loaded${more}.`
    : "Loading…";
}

/** Loads the first page again (`append` false) or the next one. */
export async function loadQueue({ append = false } = {}) {
  const generation = ++queue.generation;
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
  const status = $("filter-status").value;
  if (status) params.set("status", status);
  if (append && queue.cursor) params.set("cursor", queue.cursor);
  show($("queue-error"), false);
  try {
    const { data } = await api("GET", `/tasks?${params}`);
    if (generation !== queue.generation) return;
    if (append) {
      const fresh = new Map(data.items.map((task) => [task.id, task]));
      queue.items = [...queue.items.filter((task) => !fresh.has(task.id)), ...data.items];
    } else {
      queue.items = data.items;
    }
    queue.cursor = data.next_cursor;
    queue.loaded = true;
  } catch (error) {
    if (generation !== queue.generation) return;
    $("queue-error").textContent = `Could not load the queue: ${error.message}`;
    show($("queue-error"), true);
  }
  renderQueue();
}

/** A task the API just created, placed in the loaded queue in due order (no reload: it may run
 * before a reload, and the user should see what was scheduled). */
function addToQueue(task) {
  const status = $("filter-status").value;
  if (!STATUSES.queued.has(task.status) || (status && task.status !== status)) return;
  const items = queue.items.filter((item) => item.id !== task.id);
  const beyondLoaded = queue.cursor && items.length && runAtMs(task) > runAtMs(items[items.length - 1]);
  if (beyondLoaded) return; // it belongs to a page not loaded yet: "Load more" brings it
  const at = items.findIndex((item) => runAtMs(item) > runAtMs(task));
  items.splice(at < 0 ? items.length : at, 0, task);
  queue.items = items;
  renderQueue();
}

/** The create form as a POST /tasks body; null (the error shown) when its payload is not JSON. */
function createBody(form) {
  clearErrors(form, "create");
  const kind = form.elements.kind.value;
  const body = { action: form.elements.action.value.trim(), ...timeFields(form, kind) };
  const id = form.elements.id.value.trim();
  if (id) body.id = id;
  const jitter = form.elements.jitter_seconds.value.trim();
  if (jitter !== "") body.jitter_seconds = Number(jitter);
  const payloadText = form.elements.payload.value.trim();
  if (payloadText) {
    try {
      body.payload = JSON.parse(payloadText);
    } catch (error) {
      showError("create", { field: "payload", message: `payload: not valid JSON (${error.message})` });
      return null;
    }
  }
  return body;
}

async function createTask(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const body = createBody(form);
  if (!body) return;
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const { status, data } = await api("POST", "/tasks", { body });
    addToQueue(data);
    show($("preview"), false);
    const verb = status === 201 ? "Scheduled" : "Already scheduled:";
    notify(`${verb} ${data.id} (${data.action}), due ${utc(data.due)}.`);
    form.elements.id.value = "";
  } catch (error) {
    showError("create", error);
  } finally {
    button.disabled = false;
  }
}

/** The form's task validated by the API and its next occurrences, written nowhere (dry run). */
async function previewTask() {
  const form = $("create-form");
  show($("preview"), false);
  const body = createBody(form);
  if (!body) return;
  const button = $("preview-button");
  button.disabled = true;
  try {
    const { data } = await api("POST", "/tasks?dry_run=true", { body });
    const zone = data.task.timezone || "UTC";
    const count = data.upcoming.length;
    const next = count === 1 ? "occurrence" : `${count} occurrences`;
    const walls = zone === "UTC" ? "" : ` (wall times in ${zone})`;
    $("preview-summary").textContent =
      `${describeSchedule(data.task, { long: true })}: its next ${next}${walls}. Nothing was scheduled.`;
    const items = data.upcoming.map((item) => occurrenceItem(item, zone, "preview-item"));
    $("preview-items").replaceChildren(...items);
    show($("preview"), true);
  } catch (error) {
    showError("create", error);
  } finally {
    button.disabled = false;
  }
}

/** The create form's cron-only fields are enabled for a cron schedule only. */
function enableCronOnly(form) {
  const cron = form.elements.kind.value === "cron";
  for (const node of form.querySelectorAll("[data-cron-only]")) node.disabled = !cron;
}

/** The status filter's choices, the statuses GET /tasks accepts; unchosen, it lists the queued ones. */
function fillStatusFilter() {
  const queued = new Intl.ListFormat("en", { type: "conjunction" }).format([...STATUSES.queued]);
  const options = STATUSES.listable.map((status) => el("option", { value: status, text: status }));
  $("filter-status").replaceChildren(el("option", { value: "", text: queued }), ...options);
}

/** The queue page's controls, wired once at start. */
export function wireQueuePage() {
  fillStatusFilter();
  $("queue-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    loadQueue();
  });
  $("filter-status").addEventListener("change", () => loadQueue());
  $("filter-action").addEventListener("change", renderQueue);
  $("filter-text").addEventListener("input", renderQueue);
  $("load-more").addEventListener("click", () => loadQueue({ append: true }));
  const openById = () => {
    const id = $("open-id").value.trim();
    if (id) window.location.hash = `#/tasks/${encodeURIComponent(id)}`;
  };
  $("open-button").addEventListener("click", openById);
  $("open-id").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      openById();
    }
  });
  const create = $("create-form");
  create.addEventListener("submit", createTask);
  create.elements.kind.addEventListener("change", () => {
    showKind(create, create.elements.kind.value);
    enableCronOnly(create);
  });
  showKind(create, create.elements.kind.value);
  enableCronOnly(create);
  $("preview-button").addEventListener("click", previewTask);
}
