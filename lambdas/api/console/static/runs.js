// A task's run history (GET /tasks/<id>/runs, newest first, "Load more" for older pages) and its
// upcoming runs (GET /tasks/<id>/upcoming), on the task page.

import { api } from "./api.js";
import { $, el, field, occurrenceItem, show, timeEl } from "./dom.js";
import { seconds } from "./format.js";
import { PAUSED, STATUSES } from "./statuses.js";

const RUNS_PAGE_SIZE = 20;
const UPCOMING_COUNT = 10;

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

/** The next page of runs of the task `page` shows (its answer dropped if the page moved on). */
export async function loadMoreRuns(page) {
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

export function renderRunHistory(task) {
  if (history.requested !== task.version) refreshHistory(task);
}

function renderUpcoming(task, data) {
  const finished = STATUSES.finished.has(task.status);
  const items = finished ? [] : data?.items ?? [];
  const zone = data?.timezone || task.timezone || "UTC";
  let note;
  if (finished) note = `None: the task has finished (${task.status}).`;
  else if (!data) note = "Loading…";
  else if (!items.length) note = "None: nothing of its schedule is left.";
  else {
    note = `The next ${items.length === 1 ? "one" : items.length}, wall times in ${zone}.`;
    if (task.status === PAUSED) note += " Paused: none runs until it is resumed.";
  }
  $("upcoming-note").textContent = note;
  $("upcoming-items").replaceChildren(...items.map((item) => occurrenceItem(item, zone, "upcoming-item")));
  show($("upcoming-items"), items.length > 0);
}

async function refreshUpcoming(task) {
  const seq = ++upcoming.seq;
  upcoming.requested = task.version;
  if (STATUSES.finished.has(task.status)) {
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

export function renderUpcomingRuns(task) {
  if (upcoming.requested !== task.version) refreshUpcoming(task);
}

/** Forgets the runs of the task shown before (answers still on their way included). */
export function resetRuns() {
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
}
