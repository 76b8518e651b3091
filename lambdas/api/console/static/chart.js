// The lateness of the last hour on the queue page: GET /lateness drawn as an SVG bar chart, with its
// figures, refreshed while the queue page shows.

import { api } from "./api.js";
import { $, field, show, svgEl } from "./dom.js";
import { bucketLabels, edge, seconds } from "./format.js";

const LATENESS_MS = 10000;
const LATENESS_MINUTES = 60;

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

export async function loadLateness() {
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

export function stopLateness() {
  lateness.generation += 1;
  clearTimeout(lateness.timer);
  lateness.timer = null;
}
