// The task page's changes: steering (POST /tasks/<id>/pause, resume, skip, run-now), reschedule
// (PATCH) and cancel (DELETE), each sending the version shown as If-Match.

import { api } from "./api.js";
import { $, clearErrors, notify, show, showError, showKind, timeFields } from "./dom.js";
import { utc } from "./format.js";
import { loadTask, page, renderTask } from "./task.js";

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

/** The task page's change and steering controls, wired once at start. */
export function wireSteering() {
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
}
