// nexttick web console: a plain ES2020 module, no framework, no build step, nothing from elsewhere.
//
// It is served by the API Lambda at <API base>/console and talks to the JSON API of the same origin
// with fetch, so every action here is an API call a user could make. Hash-routed pages:
//   #/            the queue (GET /tasks), the lateness of the last hour (GET /lateness, an SVG bar
//                 chart) and the create form (POST /tasks; POST /tasks?dry_run=true previews)
//   #/tasks/<id>  one task (GET /tasks/<id>), its run history (GET .../runs), its upcoming runs
//                 (GET .../upcoming), steering (POST .../pause, resume, skip, run-now), reschedule
//                 (PATCH) and cancel (DELETE); every change sends the version read as If-Match

const PAGE_SIZE = 50;
const RUNS_PAGE_SIZE = 20;
const UPCOMING_COUNT = 10;
const POLL_MS = 2000;
const LATENESS_MS = 10000;
const LATENESS_MINUTES = 60;
const QUEUED = new Set(["pending", "running"]);
const FINISHED = new Set(["succeeded", "failed", "cancelled", "skipped"]);

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

/** A lateness in seconds in the unit that reads best: `0.20 ms`, `4.3 ms`, `120 ms`, `1.25 s`, `2 min`. */
export function seconds(value) {
  if (value === null || value === undefined || Number.isNaN(Number(value))) return "—";
  const sign = value < 0 ? "-" : "";
  const abs = Math.abs(value);
  const ms = abs * 1000;
  if (ms < 1) return `${sign}${ms.toFixed(2)} ms`;
  if (ms < 10) return `${sign}${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${sign}${Math.round(ms)} ms`;
  if (abs < 60) return `${sign}${abs.toFixed(2)} s`;
  return `${sign}${span(abs)}`;
}

/** A bucket edge in milliseconds: `10 ms`, `2.5 s`, `60 s`. */
export function milliseconds(ms) {
  return ms < 1000 ? `${ms} ms` : `${ms / 1000} s`;
}

/** The label of each lateness bucket: `≤10 ms`, …, `≤60 s`, and `>60 s` for the unbounded last one. */
export function bucketLabels(buckets) {
  return buckets.map((bucket, index) => {
    if (bucket.le_ms !== null) return `≤${milliseconds(bucket.le_ms)}`;
    const below = index > 0 ? buckets[index - 1].le_ms : null;
    return below === null ? "any" : `>${milliseconds(below)}`;
  });
}

/** A percentile or maximum of GET /lateness (a bucket's upper edge, null when unbounded) in words. */
export function edge(ms, runs, buckets) {
  if (!runs) return "—";
  if (ms !== null && ms !== undefined) return `≤ ${milliseconds(ms)}`;
  const bounded = buckets.filter((bucket) => bucket.le_ms !== null);
  return bounded.length ? `> ${milliseconds(bounded[bounded.length - 1].le_ms)}` : "—";
}

/** A wall-clock time of the API (`2030-03-31T02:30:00.5+02:00`) as `2030-03-31 02:30:00 +02:00`;
 * without an offset (a wall time a DST gap skips), as `2030-03-31 02:30`. */
export function wallTime(local) {
  const found = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d)(:\d\d)?(?:\.\d+)?(Z|[+-]\d\d:\d\d)?$/.exec(local || "");
  if (!found) return local || "—";
  const [, date, minutes, secs, offset] = found;
  if (!offset) return `${date} ${minutes}${secs && secs !== ":00" ? secs : ""}`;
  return `${date} ${minutes}${secs || ":00"} ${offset === "Z" ? "+00:00" : offset}`;
}

/** An occurrence's DST mark (`dst` of an upcoming run) in words; null without one. */
export function dstWords(dst) {
  const words = {
    shifted: "DST gap: runs after it",
    "repeated-first": "DST repeat: first of two passes",
    "repeated-second": "DST repeat: second of two passes",
  };
  return words[dst] ?? null;
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

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element, built as `el` builds HTML ones (no markup parsed: the page's policy allows no
 * inline style or script, and nothing here needs it). */
function svgEl(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, String(value));
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
    case "cron": {
      const optional = (name) => (form.elements[name] && value(name) !== "" ? { [name]: value(name) } : {});
      const names = ["cron", "timezone", "dst_skipped", "dst_repeated"];
      return Object.assign({}, ...names.map(optional));
    }
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

// ------------------------------------------------------------------------------------ lateness

const lateness = {
  timer: null, // the 10 s refresh while the queue page shows
  generation: 0,
};

const CHART = { width: 720, height: 220, left: 6, right: 6, top: 20, bottom: 40 };

/** The histogram of GET /lateness as an SVG bar chart: one bar per bucket, labelled with its edge
 * and count, the buckets over 1 s marked late; its title says the same in words. */
function latenessChart(data) {
  const labels = bucketLabels(data.buckets);
  const most = Math.max(1, ...data.buckets.map((bucket) => bucket.count));
  const plotWidth = CHART.width - CHART.left - CHART.right;
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const slot = plotWidth / Math.max(1, data.buckets.length);
  const baseline = CHART.top + plotHeight;
  const at = (ms) => edge(ms, data.runs, data.buckets);
  const summary = data.runs
    ? `Lateness of the ${data.runs} runs of the last hour: p50 ${at(data.p50_ms)}, p99 ${at(data.p99_ms)}, ` +
      `max ${at(data.max_ms)}, ${data.late_over_1s} more than 1 s late.`
    : "Lateness of the last hour: no run started in it.";
  const counts = data.buckets.map((bucket, i) => `${labels[i]}: ${bucket.count}`).join(", ");
  const chart = svgEl(
    "svg",
    {
      viewBox: `0 0 ${CHART.width} ${CHART.height}`,
      width: CHART.width,
      height: CHART.height,
      role: "img",
      "aria-labelledby": "lateness-svg-title lateness-svg-desc",
      class: "histogram",
      "data-testid": "lateness-svg",
    },
    svgEl("title", { id: "lateness-svg-title", text: summary }),
    svgEl("desc", { id: "lateness-svg-desc", text: `Runs per bucket of lateness: ${counts}.` }),
  );
  chart.append(
    svgEl("line", { x1: CHART.left, y1: baseline, x2: CHART.width - CHART.right, y2: baseline, class: "axis",
      stroke: "currentColor" }),
  );
  data.buckets.forEach((bucket, i) => {
    const height = bucket.count ? Math.max(2, (bucket.count / most) * plotHeight) : 0;
    const x = CHART.left + i * slot + slot * 0.15;
    const middle = CHART.left + i * slot + slot / 2;
    const late = bucket.le_ms === null || bucket.le_ms > 1000;
    const bar = svgEl(
      "rect",
      {
        x: x.toFixed(1),
        y: (baseline - height).toFixed(1),
        width: (slot * 0.7).toFixed(1),
        height: height.toFixed(1),
        class: late ? "bar late" : "bar",
        fill: late ? "#b3261e" : "#1f5fbf",
        "data-testid": "lateness-bar",
        "data-count": bucket.count,
        "data-le-ms": bucket.le_ms ?? "",
      },
      svgEl("title", { text: `${labels[i]}: ${bucket.count} ${bucket.count === 1 ? "run" : "runs"}` }),
    );
    chart.append(
      bar,
      svgEl("text", {
        x: middle.toFixed(1), y: (baseline - height - 5).toFixed(1), "text-anchor": "middle", class: "count",
        text: String(bucket.count),
      }),
      svgEl("text", {
        x: middle.toFixed(1), y: baseline + 17, "text-anchor": "middle", class: "label",
        "data-testid": "lateness-label", text: labels[i],
      }),
    );
  });
  chart.append(svgEl("text", {
    x: CHART.left + plotWidth / 2, y: CHART.height - 4, "text-anchor": "middle", class: "axis-title",
    text: "started late by (bucket upper edge)",
  }));
  return chart;
}

function renderLateness(data) {
  $("lateness-chart").replaceChildren(latenessChart(data));
  const list = $("lateness-figures");
  list.replaceChildren();
  const at = (ms) => edge(ms, data.runs, data.buckets);
  field(list, "Runs", data.runs, "lateness-runs");
  field(list, "Mean", data.mean_ms === null ? "—" : seconds(data.mean_ms / 1000), "lateness-mean");
  field(list, "p50", at(data.p50_ms), "lateness-p50");
  field(list, "p90", at(data.p90_ms), "lateness-p90");
  field(list, "p99", at(data.p99_ms), "lateness-p99");
  field(list, "Max", at(data.max_ms), "lateness-max");
  field(list, "Late > 1 s", data.late_over_1s, "lateness-late");
}

async function loadLateness() {
  const generation = lateness.generation;
  try {
    const { data } = await api("GET", `/lateness?minutes=${LATENESS_MINUTES}`);
    if (generation !== lateness.generation) return;
    show($("lateness-error"), false);
    renderLateness(data);
  } catch (error) {
    if (generation !== lateness.generation) return;
    $("lateness-error").textContent = `Could not load the lateness: ${error.message}`;
    show($("lateness-error"), true);
  }
  clearTimeout(lateness.timer);
  lateness.timer = setTimeout(loadLateness, LATENESS_MS);
}

function stopLateness() {
  lateness.generation += 1;
  clearTimeout(lateness.timer);
  lateness.timer = null;
}

// ---------------------------------------------------------------------------------- task page

const page = {
  id: null, // the task shown
  task: null, // as last read: its version is what If-Match sends
  timer: null, // the 2 s poll while the task is queued
  generation: 0,
};

// The task's runs and upcoming runs, read again whenever the task's version changes (a run, a
// change): a run's record is written before the task that counts it.
const history = {
  requested: null, // the task version last asked for (null: ask again)
  seq: 0, // a newer read makes older answers stale
  version: null, // the task version the first page was read at
  items: [], // the loaded runs, newest first
  cursor: null, // next_cursor of the last loaded page
  expanded: false, // "Load more" was used: a refresh keeps the older pages
  lateness: null,
};
const upcoming = { requested: null, seq: 0 };

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
    // Not at `due`: a retry's time, or `due` plus the task's jitter.
    const label = task.attempts > 0 ? "Retry at" : "Starts at (jitter)";
    field(list, label, timeEl(task.next_attempt_at, { mode: "both" }), "field-retry");
  }
  if (task.run_now_at) field(list, "Run now at", timeEl(task.run_now_at, { mode: "both" }), "field-run-now");
  if (task.schedule === "cron") {
    field(list, "Cron", task.cron, "field-cron");
    field(list, "Time zone", task.timezone || "UTC", "field-timezone");
    field(list, "DST gap", task.dst_skipped === "shift" ? "shift: runs after the gap" : "skip: does not run",
      "field-dst-skipped");
    const repeated = task.dst_repeated || "first";
    const passes = {
      first: "runs at the first pass", last: "runs at the second pass", both: "runs at both passes",
    };
    field(list, "DST repeat", `${repeated}: ${passes[repeated]}`, "field-dst-repeated");
  }
  if (task.schedule === "every") {
    field(list, "Every", `${task.every_seconds} s (${span(task.every_seconds)})`, "field-every");
  }
  if (task.jitter_seconds) {
    field(list, "Jitter", `up to ${task.jitter_seconds} s after each time`, "field-jitter");
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
  const cancellable = QUEUED.has(task.status) || task.status === "paused";
  show($("task-not-changeable"), task.status !== "pending");
  show($("reschedule-form"), task.status === "pending");
  show($("reschedule-recurring"), task.schedule !== "once");
  show($("cancel-area"), cancellable);
  if (!cancellable) show($("cancel-confirm"), false);
}

/** The steering buttons the task's status allows (the API refuses the others with a 409). */
function renderSteering(task) {
  const { status } = task;
  const canPause = QUEUED.has(status);
  const canResume = status === "paused";
  const canSkip = status === "pending" || status === "paused";
  const canRunNow = (canSkip || status === "failed") && !task.run_now_at;
  show($("pause-area"), canPause);
  show($("resume-form"), canResume);
  show($("skip-form"), canSkip);
  show($("run-now-area"), canRunNow);
  show($("steering-none"), !(canPause || canResume || canSkip || canRunNow));
  $("run-now-button").textContent = status === "failed" ? "Retry now" : "Run now";
  show($("run-now-waiting"), Boolean(task.run_now_at));
  $("run-now-at").replaceChildren(task.run_now_at ? timeEl(task.run_now_at, { mode: "both" }) : "");
  show($("resume-catch-up"), $("resume-missed").value === "each");
}

// ------------------------------------------------------------------------------- run history

const RUN_COLUMNS = 6;

/** A run's row, and a row under it with its error when it has one. */
function runRows(run) {
  const outcome = el("span", {
    class: `outcome outcome-${run.outcome}`, text: run.outcome, "data-testid": "run-outcome",
  });
  const row = el(
    "tr",
    { "data-testid": "run-row", "data-run-number": run.number, class: run.error ? "has-error" : undefined },
    el("td", { text: String(run.number), "data-testid": "run-number" }),
    el("td", {}, timeEl(run.scheduled_for, { testid: "run-scheduled" })),
    el("td", { text: String(run.attempt), "data-testid": "run-attempt" }),
    el("td", {}, outcome),
    el("td", {}, timeEl(run.started_at, { mode: "relative", testid: "run-started" })),
    el("td", {
      text: seconds(run.lateness_seconds), title: `${run.lateness_seconds} s`, "data-testid": "run-lateness",
    }),
  );
  if (!run.error) return [row];
  const error = el("td", { colspan: RUN_COLUMNS },
    el("span", { class: "visually-hidden", text: `Run ${run.number} error: ` }),
    el("span", { class: "error-text", text: run.error, "data-testid": "run-error" }));
  return [row, el("tr", { class: "run-error", "data-testid": "run-error-row" }, error)];
}

function renderHistory() {
  const summary = history.lateness;
  const list = $("history-lateness");
  list.replaceChildren();
  if (summary && summary.runs) {
    field(list, "Lateness, last run", seconds(summary.last_seconds), "history-last");
    field(list, "Lateness, p99", seconds(summary.p99_seconds), "history-p99");
    field(list, "Runs kept", summary.runs, "history-kept");
  }
  show(list, Boolean(summary && summary.runs));
  $("history-rows").replaceChildren(...history.items.flatMap(runRows));
  show($("history-wrap"), history.items.length > 0);
  show($("history-none"), history.version !== null && history.items.length === 0);
  show($("history-more"), Boolean(history.cursor));
}

/** The newest page of runs, merged above the older pages "Load more" brought (or instead of them
 * when it does not reach them). */
async function refreshHistory(task) {
  const seq = ++history.seq;
  history.requested = task.version;
  const path = `/tasks/${encodeURIComponent(task.id)}/runs?limit=${RUNS_PAGE_SIZE}`;
  try {
    const { data } = await api("GET", path);
    if (seq !== history.seq) return;
    const oldest = data.items.length ? data.items[data.items.length - 1].number : Infinity;
    const reaches = history.items.some((run) => run.number >= oldest);
    if (history.expanded && reaches) {
      const fresh = new Set(data.items.map((run) => run.number));
      history.items = [...data.items, ...history.items.filter((run) => !fresh.has(run.number))];
    } else {
      history.items = data.items;
      history.cursor = data.next_cursor;
      history.expanded = false;
    }
    history.lateness = data.lateness;
    history.version = task.version;
    show($("history-error"), false);
  } catch (error) {
    if (seq !== history.seq) return;
    history.requested = null; // asked again at the next read of the task
    $("history-error").textContent = `Could not load the run history: ${error.message}`;
    show($("history-error"), true);
  }
  renderHistory();
}

async function loadMoreRuns() {
  if (!history.cursor) return;
  const generation = page.generation;
  const button = $("history-more");
  button.disabled = true;
  const params = new URLSearchParams({ limit: String(RUNS_PAGE_SIZE), cursor: history.cursor });
  try {
    const { data } = await api("GET", `/tasks/${encodeURIComponent(page.id)}/runs?${params}`);
    if (generation !== page.generation) return;
    const known = new Set(history.items.map((run) => run.number));
    history.items = [...history.items, ...data.items.filter((run) => !known.has(run.number))];
    history.cursor = data.next_cursor;
    history.expanded = true;
    show($("history-error"), false);
  } catch (error) {
    if (generation !== page.generation) return;
    $("history-error").textContent = `Could not load more runs: ${error.message}`;
    show($("history-error"), true);
  } finally {
    button.disabled = false;
  }
  renderHistory();
}

function renderRunHistory(task) {
  if (history.requested !== task.version) refreshHistory(task);
}

// ----------------------------------------------------------------------------- upcoming runs

/** One occurrence (of GET .../upcoming or a preview): its wall time with offset in the task's zone,
 * UTC, relative; its jittered start when it differs; its DST mark; the wall times a gap skipped
 * before it. */
function occurrenceItem(item, zone, testid) {
  const node = el("li", { "data-testid": testid });
  for (const skipped of item.skipped) {
    const text = `${wallTime(skipped)} skipped (DST gap)`;
    node.append(el("span", { class: "dst-skipped", "data-testid": "occurrence-skipped", text }), " ");
  }
  const local = el("span", { class: "local", "data-testid": "occurrence-local", text: wallTime(item.local) });
  const line = el("span", { class: "occurrence" }, local);
  if (zone !== "UTC") line.append(" · ", timeEl(item.scheduled_for, { testid: "occurrence-utc" }));
  line.append(" · ", timeEl(item.scheduled_for, { mode: "relative", testid: "occurrence-relative" }));
  const jitter = (Date.parse(item.run_at) - Date.parse(item.scheduled_for)) / 1000;
  if (jitter) {
    const text = `starts ${seconds(jitter)} later`;
    const start = el("time", { datetime: item.run_at, title: utc(item.run_at), text });
    line.append(" · ", el("span", { class: "jitter", "data-testid": "occurrence-start" }, start));
  }
  const dst = dstWords(item.dst);
  if (dst) line.append(" · ", el("strong", { class: "dst", "data-testid": "occurrence-dst", text: dst }));
  node.append(line);
  return node;
}

function renderUpcoming(task, data) {
  const finished = FINISHED.has(task.status);
  const items = finished ? [] : data?.items ?? [];
  const zone = data?.timezone || task.timezone || "UTC";
  let note;
  if (finished) note = `None: the task has finished (${task.status}).`;
  else if (!data) note = "Loading…";
  else if (!items.length) note = "None: nothing of its schedule is left.";
  else {
    note = `The next ${items.length === 1 ? "one" : items.length}, wall times in ${zone}.`;
    if (task.status === "paused") note += " Paused: none runs until it is resumed.";
  }
  $("upcoming-note").textContent = note;
  $("upcoming-items").replaceChildren(...items.map((item) => occurrenceItem(item, zone, "upcoming-item")));
  show($("upcoming-items"), items.length > 0);
}

async function refreshUpcoming(task) {
  const seq = ++upcoming.seq;
  upcoming.requested = task.version;
  if (FINISHED.has(task.status)) {
    renderUpcoming(task, null); // a finished task has none (the API answers an empty list)
    return;
  }
  const path = `/tasks/${encodeURIComponent(task.id)}/upcoming?count=${UPCOMING_COUNT}`;
  try {
    const { data } = await api("GET", path);
    if (seq !== upcoming.seq) return;
    show($("upcoming-error"), false);
    renderUpcoming(task, data);
  } catch (error) {
    if (seq !== upcoming.seq) return;
    upcoming.requested = null; // asked again at the next read of the task
    $("upcoming-error").textContent = `Could not load the upcoming runs: ${error.message}`;
    show($("upcoming-error"), true);
  }
}

function renderUpcomingRuns(task) {
  if (upcoming.requested !== task.version) refreshUpcoming(task);
}

// What the task page shows of a task, in order; the history and upcoming runs are read again when
// the task's version changes.
const TASK_PANELS = [
  renderFailure, renderFields, renderLastRun, renderSteering, renderChanges,
  renderRunHistory, renderUpcomingRuns,
];

function renderTask(task) {
  page.task = task;
  show($("task-load-error"), false);
  show($("task-body"), true);
  for (const panel of TASK_PANELS) panel(task);
  const watching = QUEUED.has(task.status) || Boolean(task.run_now_at);
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
    if (page.task && data.version < page.task.version) {
      schedulePoll(true); // read before a change this page made and has shown: read again
      return;
    }
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

/** A 412 answer: someone changed the task since it was read (said in `slot`, by the button). */
async function changedMeanwhile(slot = $("task-action-error")) {
  notify("The task changed meanwhile — reloaded. Check it and try again.", "warning");
  slot.textContent = "The task changed meanwhile — reloaded.";
  show(slot, true);
  await loadTask(page.id);
}

/** One steering call (POST /tasks/<id>/<verb>, If-Match the version shown): the task it answers is
 * shown; a 412 reloads; any other refusal (409, 422) shows the API's message. */
async function steer(button, verb, body, said) {
  const slot = $("steering-error");
  show(slot, false);
  show($("task-action-error"), false);
  button.disabled = true;
  try {
    const path = `/tasks/${encodeURIComponent(page.id)}/${verb}`;
    const { data } = await api("POST", path, { body, version: page.task.version });
    renderTask(data);
    notify(said(data));
  } catch (error) {
    if (error.status === 412) await changedMeanwhile(slot);
    else {
      slot.textContent = error.message;
      show(slot, true);
    }
  } finally {
    button.disabled = false;
  }
}

function pauseTask() {
  const said = (task) => `Paused ${task.id}: nothing of it runs until it is resumed.`;
  steer($("pause-button"), "pause", undefined, said);
}

function resumeTask(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const missed = form.elements.missed.value;
  const body = { missed };
  const most = form.elements.max_catch_up.value.trim();
  if (missed === "each" && most !== "") body.max_catch_up = Number(most);
  const said = (task) => `Resumed ${task.id} (missed: ${missed})${task.due ? `, due ${utc(task.due)}` : ""}.`;
  steer(form.querySelector("button[type=submit]"), "resume", body, said);
}

function skipNext(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const count = form.elements.count.value.trim();
  const body = count === "" ? undefined : { count: Number(count) };
  const said = (task) => (task.due
    ? `Skipped ${count || 1}: ${task.id} is due ${utc(task.due)}.`
    : `Skipped: ${task.id} is ${task.status}.`);
  steer(form.querySelector("button[type=submit]"), "skip", body, said);
}

function runNow() {
  const said = (task) => `Running ${task.id} now (${utc(task.run_now_at)}).`;
  steer($("run-now-button"), "run-now", undefined, said);
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
  show($("steering-error"), false);
  show($("cancel-confirm"), false);
  clearErrors($("reschedule-form"), "reschedule");
  history.seq += 1;
  upcoming.seq += 1;
  Object.assign(history, {
    requested: null, version: null, items: [], cursor: null, expanded: false, lateness: null,
  });
  upcoming.requested = null;
  renderHistory();
  show($("history-none"), false);
  $("upcoming-note").textContent = "Loading…";
  $("upcoming-items").replaceChildren();
  show($("upcoming-error"), false);
  show($("history-error"), false);
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
    stopLateness();
    openTaskPage(decodeURIComponent(match[1]));
  } else {
    page.generation += 1;
    page.id = null;
    clearTimeout(page.timer);
    document.title = "nexttick console";
    loadQueue();
    stopLateness();
    loadLateness();
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
  create.elements.kind.addEventListener("change", () => {
    showKind(create, create.elements.kind.value);
    enableCronOnly(create);
  });
  showKind(create, create.elements.kind.value);
  enableCronOnly(create);
  $("preview-button").addEventListener("click", previewTask);
  const reschedule = $("reschedule-form");
  reschedule.addEventListener("submit", rescheduleTask);
  const rescheduleKind = reschedule.elements.kind;
  rescheduleKind.addEventListener("change", () => showKind(reschedule, rescheduleKind.value));
  showKind(reschedule, reschedule.elements.kind.value);
  $("cancel-start").addEventListener("click", () => show($("cancel-confirm"), true));
  $("cancel-no").addEventListener("click", () => show($("cancel-confirm"), false));
  $("cancel-yes").addEventListener("click", cancelTask);
  $("pause-button").addEventListener("click", pauseTask);
  $("resume-form").addEventListener("submit", resumeTask);
  const missed = $("resume-missed");
  missed.addEventListener("change", () => show($("resume-catch-up"), missed.value === "each"));
  $("skip-form").addEventListener("submit", skipNext);
  $("run-now-button").addEventListener("click", runNow);
  $("history-more").addEventListener("click", loadMoreRuns);
  window.addEventListener("hashchange", route);
  setInterval(tickClocks, 1000);
  document.body.dataset.ready = "true";
  route();
}

start();
