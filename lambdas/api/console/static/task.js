// The task page: one task (GET /tasks/<id>), its fields, its last run, the steering and changes its
// status allows, watched while it is queued.

import { api } from "./api.js";
import { $, clearErrors, el, field, show, statusBadge, timeEl } from "./dom.js";
import { describeSchedule, span } from "./format.js";
import { loadMoreRuns, renderRunHistory, renderUpcomingRuns, resetRuns } from "./runs.js";
import { PAUSED, STATUSES } from "./statuses.js";

const POLL_MS = 2000;

export const page = {
  id: null, // the task shown
  task: null, // as last read: its version is what If-Match sends
  timer: null, // the 2 s poll while the task is queued
  generation: 0,
};

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
  const cancellable = STATUSES.listable.includes(task.status);
  show($("task-not-changeable"), task.status !== "pending");
  show($("reschedule-form"), task.status === "pending");
  show($("reschedule-recurring"), task.schedule !== "once");
  show($("cancel-area"), cancellable);
  if (!cancellable) show($("cancel-confirm"), false);
}

/** The steering buttons the task's status allows (the API refuses the others with a 409). */
function renderSteering(task) {
  const { status } = task;
  const canPause = STATUSES.queued.has(status);
  const canResume = status === PAUSED;
  const canSkip = status === "pending" || status === PAUSED;
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

// What the task page shows of a task, in order; the history and upcoming runs are read again when
// the task's version changes.
const TASK_PANELS = [
  renderFailure, renderFields, renderLastRun, renderSteering, renderChanges,
  renderRunHistory, renderUpcomingRuns,
];

export function renderTask(task) {
  page.task = task;
  show($("task-load-error"), false);
  show($("task-body"), true);
  for (const panel of TASK_PANELS) panel(task);
  const watching = STATUSES.queued.has(task.status) || Boolean(task.run_now_at);
  show($("task-polling"), watching);
  schedulePoll(watching);
}

function schedulePoll(watching) {
  clearTimeout(page.timer);
  page.timer = watching ? setTimeout(() => loadTask(page.id), POLL_MS) : null;
}

export async function loadTask(id) {
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

export function openTaskPage(id) {
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
  resetRuns();
  loadTask(id);
}

/** Stops watching the task shown: answers still on their way are dropped. */
export function leaveTaskPage() {
  page.generation += 1;
  page.id = null;
  clearTimeout(page.timer);
}

export function wireTaskPage() {
  $("history-more").addEventListener("click", () => loadMoreRuns(page));
}
