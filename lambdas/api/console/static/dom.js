// Building and updating the page: elements, times, notices, form errors and the pieces two pages share.

import { dstWords, relative, seconds, utc, wallTime } from "./format.js";

export const $ = (id) => document.getElementById(id);

export function el(tag, attributes = {}, ...children) {
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
export function svgEl(tag, attributes = {}, ...children) {
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
export function timeEl(iso, { mode = "absolute", testid } = {}) {
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

export function tickClocks() {
  const now = Date.now();
  for (const node of document.querySelectorAll("time[data-relative]")) {
    node.textContent = relative(node.getAttribute("datetime"), now);
  }
  for (const node of document.querySelectorAll("time[data-both]")) {
    const iso = node.getAttribute("datetime");
    node.textContent = `${utc(iso)} (${relative(iso, now)})`;
  }
}

export function show(node, visible) {
  node.hidden = !visible;
}

let noticeTimer = null;

/** A short message at the top of the page (announced to screen readers). */
export function notify(text, kind = "info") {
  const node = $("notice");
  node.textContent = text;
  node.dataset.kind = kind;
  show(node, true);
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => show(node, false), 8000);
}

/** Hides the message: it belongs to the page it was shown on. */
export function hideNotice() {
  clearTimeout(noticeTimer);
  show($("notice"), false);
}

/** Shows the kind-specific fields of a form (`data-kind`) for the chosen kind only. */
export function showKind(form, kind) {
  for (const node of form.querySelectorAll("[data-kind]")) show(node, node.dataset.kind === kind);
}

export function clearErrors(form, prefix) {
  for (const node of form.querySelectorAll(".field-error")) {
    node.textContent = "";
    show(node, false);
  }
  for (const node of form.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
  const general = $(`${prefix}-error-form`);
  if (general) show(general, false);
}

/** An API error next to the field it names (`<prefix>-error-<field>`, when shown), else under the form. */
export function showError(prefix, error) {
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
export function timeFields(form, kind) {
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

export function statusBadge(status, testid) {
  return el("span", { class: `status status-${status}`, text: status, "data-testid": testid });
}

export function field(list, label, value, testid) {
  const empty = value === null || value === undefined || value === "";
  const content = value instanceof Node ? value : el("span", { text: empty ? "—" : String(value) });
  if (testid) content.dataset.testid = testid;
  list.append(el("dt", { text: label }), el("dd", {}, content));
}

/** One occurrence (of GET .../upcoming or a preview): its wall time with offset in the task's zone,
 * UTC, relative; its jittered start when it differs; its DST mark; the wall times a gap skipped
 * before it. */
export function occurrenceItem(item, zone, testid) {
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
