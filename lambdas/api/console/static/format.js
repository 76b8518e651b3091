// How the console writes times, durations, lateness and schedules (pure functions, no DOM).

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
