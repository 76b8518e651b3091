// nexttick web console: a plain ES2020 module, no framework, no build step, nothing from elsewhere.
//
// It is served by the API Lambda at <API base>/console and talks to the JSON API of the same origin
// with fetch, so every action here is an API call a user could make. Hash-routed pages:
//   #/            the queue (GET /tasks) and the create form (POST /tasks)
//   #/tasks/<id>  one task (GET /tasks/<id>), reschedule (PATCH) and cancel (DELETE), both If-Match
//
// A later change adds run history, upcoming runs and steering (pause / resume / skip / run now):
// their places are the labelled sections of the task page and TASK_PANELS below.

const PAGE_SIZE = 50;
const POLL_MS = 2000;
const QUEUED = new Set(["pending", "running"]);

// ------------------------------------------------------------------------------------------ API

/** What precedes `/console` in the page's path: "" locally, "/v1" behind API Gateway's stage URL. */
export function apiBase(pathname) {
  const path = pathname.replace(/\/+$/, "");
  const at = path.lastIndexOf("/console");
  return at >= 0 ? path.slice(0, at) : "";
}

const API = apiBase(window.location.pathname);

/** A refused or failed API call: the API's `{error, message, field}` and the HTTP status. */
class ApiError extends Error {
  constructor(status, body) {
    super(body.message);
    this.status = status;
    this.code = body.error;
    this.field = body.field ?? null;
  }
}

/** One API call; resolves to {status, data} on 2xx, rejects with an ApiError otherwise. */
async function api(method, path, { body, version } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (version !== undefined) headers["If-Match"] = `"${version}"`;
  let response;
  try {
    response = await fetch(`${API}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch (error) {
    const message = `network: the API did not answer (${error.message})`;
    throw new ApiError(0, { error: "network", message });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const known = data && typeof data === "object" && typeof data.message === "string";
    throw new ApiError(
      response.status,
      known ? data : {
        error: `http_${response.status}`,
        message: `HTTP ${response.status}: ${text || response.statusText}`,
      },
    );
  }
  return { status: response.status, data };
}

// ----------------------------------------------------------------------------------- formatting

const pad = (n) => String(n).padStart(2, "0");

/** An instant as `2030-12-01 08:00:00 UTC`. */
export function utc(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

/** A span of seconds in its two largest units: `45 s`, `3 min`, `1 h 30 min`, `2 d 4 h`. */
export function span(seconds) {
  let rest = Math.round(Math.abs(seconds));
  if (rest < 60) return `${rest} s`;
  const units = [["d", 86400], ["h", 3600], ["min", 60], ["s", 1]];
  const parts = [];
  for (const [name, size] of units) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count || parts.length) parts.push([count, name]);
    if (parts.length === 2) break;
  }
  return parts.filter(([count]) => count).map(([count, name]) => `${count} ${name}`).join(" ");
}

/** An instant relative to now: `in 3 min`, `12 s ago`, `now`. */
export function relative(iso, now = Date.now()) {
  if (!iso) return "";
  const seconds = (new Date(iso).getTime() - now) / 1000;
  if (Number.isNaN(seconds)) return "";
  if (Math.abs(seconds) < 1) return "now";
  // Whole seconds towards now, so a count-down never shows the next second early.
  const shown = span(seconds > 0 ? Math.ceil(seconds) : Math.floor(-seconds));
  return seconds > 0 ? `in ${shown}` : `${shown} ago`;
}

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const DAY_NAMES = { SUN: 0, MON: 1, TUE: 2, WED: 3, THU: 4, FRI: 5, SAT: 6 };
const isNumber = (field) => /^\d+$/.test(field);

function dayName(field) {
  const value = isNumber(field) ? Number(field) : DAY_NAMES[field.toUpperCase()];
  return value === undefined || value > 7 ? null : DAYS[value];
}

function days(field) {
  if (field === "*" || field === "?") return "every day";
  if (/^(1-5|MON-FRI)$/i.test(field)) return "on weekdays";
  const names = field.split(",").map(dayName);
  return names.every(Boolean) ? `every ${names.join(", ")}` : null;
}

/** The common shapes of a 5-field cron expression in words; null for the others. */
export function describeCron(expression) {
  const fields = (expression || "").trim().split(/\s+/);
  if (fields.length !== 5) return null;
  const [minute, hour, dom, month, dow] = fields;
  if (month !== "*") return null;
  if (dom === "*" && dow === "*" && hour === "*") {
    if (minute === "*") return "every minute";
    const step = /^\*\/(\d+)$/.exec(minute);
    if (step) return `every ${step[1]} minutes`;
    if (isNumber(minute)) return `every hour at minute ${Number(minute)}`;
    return null;
  }
  if (!isNumber(minute) || !isNumber(hour)) return null;
  const at = `at ${pad(hour)}:${pad(minute)}`;
  if (dom === "*") {
    const when = days(dow);
    return when ? `${when} ${at}` : null;
  }
  if (isNumber(dom) && (dow === "*" || dow === "?")) return `on day ${Number(dom)} of every month ${at}`;
  return null;
}

/** A task's schedule in words, with its zone: `once`, `every 1 h 30 min`,
 * `every Friday at 09:00 (cron “0 9 * * 5”), in Europe/Berlin`. */
export function describeSchedule(task, { long = false } = {}) {
  let words;
  if (task.schedule === "cron") {
    const described = describeCron(task.cron);
    const expression = `cron “${task.cron}”`;
    words = `${described ? `${described} (${expression})` : expression}, in ${task.timezone || "UTC"}`;
  } else if (task.schedule === "every") {
    words = `every ${span(task.every_seconds)}`;
  } else {
    words = long && task.due ? `once, at ${utc(task.due)}` : "once";
  }
  if (task.end) words += `, until ${utc(task.end)}`;
  return words;
}

// ----------------------------------------------------------------------------------------- DOM

const $ = (id) => document.getElementById(id);

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) node.append(child);
  return node;
}

/** An instant shown absolute (UTC) or relative to now; relative ones tick every second. */
function timeEl(iso, { mode = "absolute", testid } = {}) {
  if (!iso) return el("span", { text: "—", "data-testid": testid });
  const node = el("time", { datetime: iso, title: utc(iso), "data-testid": testid });
  if (mode === "relative") {
    node.dataset.relative = "";
    node.textContent = relative(iso);
  } else if (mode === "both") {
    node.dataset.both = "";
    node.textContent = `${utc(iso)} (${relative(iso)})`;
  } else {
    node.textContent = utc(iso);
  }
  return node;
}

function tickClocks() {
  const now = Date.now();
  for (const node of document.querySelectorAll("time[data-relative]")) {
    node.textContent = relative(node.getAttribute("datetime"), now);
  }
  for (const node of document.querySelectorAll("time[data-both]")) {
    const iso = node.getAttribute("datetime");
    node.textContent = `${utc(iso)} (${relative(iso, now)})`;
  }
}

function show(node, visible) {
  node.hidden = !visible;
}

let noticeTimer = null;

/** A short message at the top of the page (announced to screen readers). */
function notify(text, kind = "info") {
  const node = $("notice");
  node.textContent = text;
  node.dataset.kind = kind;
  show(node, true);
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => show(node, false), 8000);
}

/** Shows the kind-specific fields of a form (`data-kind`) for the chosen kind only. */
function showKind(form, kind) {
  for (const node of form.querySelectorAll("[data-kind]")) show(node, node.dataset.kind === kind);
}

function clearErrors(form, prefix) {
  for (const node of form.querySelectorAll(".field-error")) {
    node.textContent = "";
    show(node, false);
  }
  for (const node of form.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
  const general = $(`${prefix}-error-form`);
  if (general) show(general, false);
}

/** An API error next to the field it names (`<prefix>-error-<field>`, when shown), else under the form. */
function showError(prefix, error) {
  const named = error.field ? $(`${prefix}-error-${error.field}`) : null;
  const slot = named && !named.parentElement.closest("[hidden]") ? named : $(`${prefix}-error-form`);
  slot.textContent = error.message;
  show(slot, true);
  const input = slot === named && document.querySelector(`[aria-describedby="${CSS.escape(named.id)}"]`);
  if (input) {
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }
}

/** The filled time fields of a form for its kind, as API body fields. */
function timeFields(form, kind) {
  const value = (name) => form.elements[name].value.trim();
  switch (kind) {
    case "delay":
      return value("delay_seconds") === "" ? {} : { delay_seconds: Number(value("delay_seconds")) };
    case "due":
      return value("due") === "" ? {} : { due: value("due") };
    case "cron":
      return {
        ...(value("cron") === "" ? {} : { cron: value("cron") }),
        ...(value("timezone") === "" ? {} : { timezone: value("timezone") }),
      };
    case "every": {
      const every = value("every");
      return every === "" ? {} : { every: /^\d+(\.\d+)?$/.test(every) ? Number(every) : every };
    }
    default:
      return {};
  }
}

// --------------------------------------------------------------------------------- queue page

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

function statusBadge(status, testid) {
  return el("span", { class: `status status-${status}`, text: status, "data-testid": testid });
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
async function loadQueue({ append = false } = {}) {
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
  if (!QUEUED.has(task.status) || (status && task.status !== status)) return;
  const items = queue.items.filter((item) => item.id !== task.id);
  const beyondLoaded = queue.cursor && items.length && runAtMs(task) > runAtMs(items[items.length - 1]);
  if (beyondLoaded) return; // it belongs to a page not loaded yet: "Load more" brings it
  const at = items.findIndex((item) => runAtMs(item) > runAtMs(task));
  items.splice(at < 0 ? items.length : at, 0, task);
  queue.items = items;
  renderQueue();
}

async function createTask(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form, "create");
  const kind = form.elements.kind.value;
  const body = { action: form.elements.action.value.trim(), ...timeFields(form, kind) };
  const id = form.elements.id.value.trim();
  if (id) body.id = id;
  const payloadText = form.elements.payload.value.trim();
  if (payloadText) {
    try {
      body.payload = JSON.parse(payloadText);
    } catch (error) {
      showError("create", { field: "payload", message: `payload: not valid JSON (${error.message})` });
      return;
    }
  }
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const { status, data } = await api("POST", "/tasks", { body });
    addToQueue(data);
    const verb = status === 201 ? "Scheduled" : "Already scheduled:";
    notify(`${verb} ${data.id} (${data.action}), due ${utc(data.due)}.`);
    form.elements.id.value = "";
  } catch (error) {
    showError("create", error);
  } finally {
    button.disabled = false;
  }
}

// ---------------------------------------------------------------------------------- task page

const page = {
  id: null, // the task shown
  task: null, // as last read: its version is what If-Match sends
  timer: null, // the 2 s poll while the task is queued
  generation: 0,
};

function field(list, label, value, testid) {
  const empty = value === null || value === undefined || value === "";
  const content = value instanceof Node ? value : el("span", { text: empty ? "—" : String(value) });
  if (testid) content.dataset.testid = testid;
  list.append(el("dt", { text: label }), el("dd", {}, content));
}

function renderFailure(task) {
  const failed = task.status === "failed";
  show($("task-failure"), failed);
  $("task-failure-text").textContent = failed
    ? task.last_run?.error || `No error was recorded (${task.last_run?.outcome || "no run"}).`
    : "";
}

function renderFields(task) {
  const list = $("task-fields");
  list.replaceChildren();
  field(list, "Id", task.id, "field-id");
  field(list, "Action", task.action, "field-action");
  field(list, "Status", statusBadge(task.status), "field-status");
  field(list, "Schedule", describeSchedule(task, { long: true }), "field-schedule");
  field(list, "Due", timeEl(task.due, { mode: "both" }), "field-due");
  if (task.next_attempt_at) {
    field(list, "Retry at", timeEl(task.next_attempt_at, { mode: "both" }), "field-retry");
  }
  if (task.schedule === "cron") {
    field(list, "Cron", task.cron, "field-cron");
    field(list, "Time zone", task.timezone || "UTC", "field-timezone");
  }
  if (task.schedule === "every") {
    field(list, "Every", `${task.every_seconds} s (${span(task.every_seconds)})`, "field-every");
  }
  if (task.end) field(list, "Ends", timeEl(task.end), "field-end");
  field(list, "Attempts", `${task.attempts} of ${task.max_attempts} for this occurrence`, "field-attempts");
  field(list, "Runs", task.runs, "field-runs");
  field(list, "Retry backoff", `${task.retry_backoff_seconds} s`, "field-backoff");
  const grace = task.misfire_grace_seconds;
  field(list, "Misfire grace", grace === null ? "none" : `${grace} s`, "field-grace");
  field(list, "Version", task.version, "field-version");
  field(list, "Created", timeEl(task.created_at, { mode: "both" }), "field-created");
  field(list, "Updated", timeEl(task.updated_at, { mode: "both" }), "field-updated");
  field(list, "Payload", el("pre", { text: JSON.stringify(task.payload, null, 2) }), "field-payload");
}

function renderLastRun(task) {
  const run = task.last_run;
  show($("last-run-none"), !run);
  show($("last-run"), Boolean(run));
  const list = $("last-run");
  list.replaceChildren();
  if (!run) return;
  const outcome = el("span", { class: `outcome outcome-${run.outcome}`, text: run.outcome });
  field(list, "Outcome", outcome, "last-run-outcome");
  if (run.error) field(list, "Error", el("pre", { class: "error-text", text: run.error }), "last-run-error");
  field(list, "Scheduled for", timeEl(run.scheduled_for), "last-run-scheduled");
  field(list, "Attempt", run.attempt, "last-run-attempt");
  field(list, "Started", timeEl(run.started_at, { mode: "both" }), "last-run-started");
  field(list, "Finished", timeEl(run.finished_at, { mode: "both" }), "last-run-finished");
}

function renderChanges(task) {
  const queued = QUEUED.has(task.status);
  show($("task-not-changeable"), !queued);
  show($("reschedule-form"), task.status === "pending");
  show($("reschedule-recurring"), task.schedule !== "once");
  show($("cancel-area"), queued);
  if (!queued) show($("cancel-confirm"), false);
}

// What the task page shows of a task, in order. A later change adds its panels here (run history,
// upcoming runs, steering), beside their placeholders in index.html.
const TASK_PANELS = [renderFailure, renderFields, renderLastRun, renderChanges];

function renderTask(task) {
  page.task = task;
  show($("task-load-error"), false);
  show($("task-body"), true);
  for (const panel of TASK_PANELS) panel(task);
  const watching = QUEUED.has(task.status);
  show($("task-polling"), watching);
  schedulePoll(watching);
}

function schedulePoll(watching) {
  clearTimeout(page.timer);
  page.timer = watching ? setTimeout(() => loadTask(page.id), POLL_MS) : null;
}

async function loadTask(id) {
  const generation = page.generation;
  try {
    const { data } = await api("GET", `/tasks/${encodeURIComponent(id)}`);
    if (generation !== page.generation) return;
    renderTask(data);
  } catch (error) {
    if (generation !== page.generation) return;
    if (error.status === 0 && page.task) {
      schedulePoll(true); // a network hiccup while watching: try again at the next tick
      return;
    }
    $("task-load-error").textContent =
      error.status === 404 ? `No task ${id}.` : `Could not load the task: ${error.message}`;
    show($("task-load-error"), true);
    show($("task-body"), error.status !== 404 && Boolean(page.task));
    show($("task-polling"), false);
  }
}

/** A 412 answer: someone changed the task since it was read. */
async function changedMeanwhile() {
  notify("The task changed meanwhile — reloaded. Check it and try again.", "warning");
  $("task-action-error").textContent = "The task changed meanwhile — reloaded.";
  show($("task-action-error"), true);
  await loadTask(page.id);
}

async function rescheduleTask(event) {
  event.preventDefault();
  const form = event.currentTarget;
  clearErrors(form, "reschedule");
  show($("task-action-error"), false);
  const body = timeFields(form, form.elements.kind.value);
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const path = `/tasks/${encodeURIComponent(page.id)}`;
    const { data } = await api("PATCH", path, { body, version: page.task.version });
    renderTask(data);
    notify(`Rescheduled ${data.id}: due ${utc(data.due)}.`);
  } catch (error) {
    if (error.status === 412) await changedMeanwhile();
    else showError("reschedule", error);
  } finally {
    button.disabled = false;
  }
}

async function cancelTask() {
  const button = $("cancel-yes");
  button.disabled = true;
  show($("task-action-error"), false);
  try {
    const path = `/tasks/${encodeURIComponent(page.id)}`;
    const { status, data } = await api("DELETE", path, { version: page.task.version });
    show($("cancel-confirm"), false);
    notify(status === 202
      ? `Cancelled ${page.id}; the occurrence already due may still complete.`
      : `Cancelled ${page.id}.`);
    if (data) renderTask(data);
    await loadTask(page.id);
  } catch (error) {
    if (error.status === 412) {
      await changedMeanwhile();
    } else {
      $("task-action-error").textContent = error.message;
      show($("task-action-error"), true);
    }
  } finally {
    button.disabled = false;
  }
}

// ------------------------------------------------------------------------------------- routing

function openTaskPage(id) {
  page.generation += 1;
  page.id = id;
  page.task = null;
  clearTimeout(page.timer);
  $("task-id").textContent = id;
  document.title = `${id} · nexttick console`;
  show($("task-body"), false);
  show($("task-failure"), false);
  show($("task-polling"), false);
  show($("task-action-error"), false);
  show($("cancel-confirm"), false);
  clearErrors($("reschedule-form"), "reschedule");
  loadTask(id);
}

function route() {
  clearTimeout(noticeTimer);
  show($("notice"), false); // a message belongs to the page it was shown on
  const match = /^#\/tasks\/(.+)$/.exec(window.location.hash);
  const onTask = Boolean(match);
  show($("queue-view"), !onTask);
  show($("task-view"), onTask);
  if (onTask) {
    openTaskPage(decodeURIComponent(match[1]));
  } else {
    page.generation += 1;
    page.id = null;
    clearTimeout(page.timer);
    document.title = "nexttick console";
    loadQueue();
  }
}

function start() {
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
  create.elements.kind.addEventListener("change", () => showKind(create, create.elements.kind.value));
  showKind(create, create.elements.kind.value);
  const reschedule = $("reschedule-form");
  reschedule.addEventListener("submit", rescheduleTask);
  const rescheduleKind = reschedule.elements.kind;
  rescheduleKind.addEventListener("change", () => showKind(reschedule, rescheduleKind.value));
  showKind(reschedule, reschedule.elements.kind.value);
  $("cancel-start").addEventListener("click", () => show($("cancel-confirm"), true));
  $("cancel-no").addEventListener("click", () => show($("cancel-confirm"), false));
  $("cancel-yes").addEventListener("click", cancelTask);
  window.addEventListener("hashchange", route);
  setInterval(tickClocks, 1000);
  document.body.dataset.ready = "true";
  route();
}

start();
