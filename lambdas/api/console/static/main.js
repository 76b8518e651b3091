// nexttick web console: native ES modules, no framework, no build step, nothing from elsewhere.
//
// It is served by the API Lambda at <API base>/console and talks to the JSON API of the same origin
// with fetch, so every action here is an API call a user could make. Hash-routed pages:
//   #/            the queue (GET /tasks), the lateness of the last hour (GET /lateness, an SVG bar
//                 chart) and the create form (POST /tasks; POST /tasks?dry_run=true previews)
//   #/tasks/<id>  one task (GET /tasks/<id>), its run history (GET .../runs), its upcoming runs
//                 (GET .../upcoming), steering (POST .../pause, resume, skip, run-now), reschedule
//                 (PATCH) and cancel (DELETE); every change sends the version read as If-Match
// The task statuses come from the API's OpenAPI document (GET /openapi.json), read before either page.

import { loadLateness, stopLateness } from "./chart.js";
import { $, hideNotice, notify, show, tickClocks } from "./dom.js";
import { loadQueue, wireQueuePage } from "./queue.js";
import { loadStatuses } from "./statuses.js";
import { wireSteering } from "./steering.js";
import { leaveTaskPage, openTaskPage, wireTaskPage } from "./task.js";

const RETRY_MS = 5000;

function route() {
  hideNotice(); // a message belongs to the page it was shown on
  const match = /^#\/tasks\/(.+)$/.exec(window.location.hash);
  const onTask = Boolean(match);
  show($("queue-view"), !onTask);
  show($("task-view"), onTask);
  if (onTask) {
    stopLateness();
    openTaskPage(decodeURIComponent(match[1]));
  } else {
    leaveTaskPage();
    document.title = "nexttick console";
    loadQueue();
    stopLateness();
    loadLateness();
  }
}

async function start() {
  try {
    await loadStatuses();
  } catch (error) {
    notify(`Could not read the API's description (${error.message}); trying again.`, "warning");
    setTimeout(start, RETRY_MS);
    return;
  }
  wireQueuePage();
  wireTaskPage();
  wireSteering();
  window.addEventListener("hashchange", route);
  setInterval(tickClocks, 1000);
  document.body.dataset.ready = "true";
  route();
}

start();
