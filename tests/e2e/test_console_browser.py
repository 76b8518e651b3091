"""The web console in a real headless Chromium, against `nexttick local` started as a user starts it
(the installed entry point, a fresh state directory, free ports): a task scheduled through the form
is queued and watched until it has run; a recurring one shows its upcoming runs and run history and
is paused, skipped, run now, resumed and cancelled from its page; another is rescheduled (after a
412 from a change made elsewhere meanwhile) and cancelled with its version; the lateness of the last
hour is drawn as an SVG histogram; a dry-run preview shows a cron's next occurrences and creates
nothing; a bad cron is explained next to its field; a failed task shows its error; filters and "Load
more" work over the API's pages. No page may log an error or fail a request beyond the error answers
a test provokes.

`NEXTTICK_SCREENSHOTS=1` also writes docs/console-queue.png (the window, 1280x800) and
docs/console-task.png (the whole page, 1280 wide), with tasks that have run.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Locator, Page, Response, Route, expect

from bench.localstack import REPO, LocalStackProcess, parse_time, stack_environment
from lambdas.api.console import STATIC_DIR as CONSOLE_STATIC
from tests.support.browser import VIEWPORT, PageWatch, chromium, require_chromium

pytestmark = [pytest.mark.xdist_group("console-e2e"), pytest.mark.slow]
require_chromium()

SCREENSHOTS = os.environ.get("NEXTTICK_SCREENSHOTS") == "1"
RUN_TIMEOUT_MS = 60_000  # a task due in 3 s has run and been read back well within this
# Queued before the console opens: one of each kind of schedule, as a user's queue would hold.
BACKGROUND: list[dict[str, Any]] = [
    {"id": "weekly-report", "action": "log", "cron": "0 9 * * 5", "timezone": "Europe/Berlin",
     "payload": {"report": "sales"}},
    {"id": "heartbeat", "action": "log", "every": "1h30m", "payload": {"ping": True}},
    {"id": "invoice-ada", "action": "log", "due": "2030-12-01T09:00:00+01:00",
     "payload": {"to": "ada@example.com"}},
]  # fmt: skip


def closed_port_url() -> str:
    """A loopback webhook URL nothing listens on: every delivery to it fails."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackProcess]:
    state_dir = tmp_path_factory.mktemp("nexttick-state")
    # Actions: the configured `log`, and `hook`, a webhook that always fails.
    environment = stack_environment(state_dir, hook_url=closed_port_url())
    stack = LocalStackProcess(state_dir, environment, state_dir.parent / "stack.log")
    stack.start()
    try:
        for body in BACKGROUND:
            stack.post(body)
        yield stack
    finally:
        stack.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@contextmanager
def watched_page(browser: Browser) -> Iterator[tuple[Page, PageWatch]]:
    """A fresh page, watched for errors from its first request on."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        yield page, PageWatch.attach(page)
    finally:
        context.close()


@pytest.fixture
def console(browser: Browser, stack: LocalStackProcess) -> Iterator[tuple[Page, PageWatch]]:
    """A fresh page on the console, watched for errors from its first request on."""
    with watched_page(browser) as (page, watch):
        page.goto(f"{stack.api_url}/console")
        expect(page.locator("body[data-ready=true]")).to_be_attached()
        yield page, watch


def row(page: Page, task_id: str) -> Locator:
    return page.locator(f'[data-testid=task-row][data-task-id="{task_id}"]')


def fill_form(page: Page, *, kind: str, **fields: str) -> None:
    """Fill the create form (action `log`): `create-<name>` is filled (a select: chosen) with each value."""
    page.get_by_test_id("create-action").fill("log")
    page.get_by_test_id("create-kind").select_option(kind)
    for name, value in fields.items():
        found = page.get_by_test_id(f"create-{name}")
        if found.evaluate("node => node.tagName") == "SELECT":
            found.select_option(value)
        else:
            found.fill(value)


def create(page: Page, *, kind: str, **fields: str) -> None:
    """Fill the create form (action `log`) and submit it."""
    fill_form(page, kind=kind, **fields)
    page.get_by_test_id("create-submit").click()


def shown_utc(instant: str) -> str:
    """An API instant as the console writes it: `2030-12-01 08:00:00 UTC`."""
    return datetime.fromtimestamp(parse_time(instant), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def send(page: Page, watch: PageWatch, click: Callable[[], None], method: str, url: str) -> Response:
    """`click` a button of the task page that sends `method url` with If-Match, and its answer.

    A recurring task's runs change its version: the answer may be a 412 when a run landed after the
    page last read the task. The page then says so and reloads; the 412 is declared and the click
    repeated on the version now shown."""
    for _ in range(5):
        with page.expect_response(lambda r: r.request.method == method and r.url == url) as answer:
            click()
        response = answer.value
        sent = response.request.headers["if-match"]
        assert re.fullmatch(r'"\d+"', sent), sent
        if response.status != 412:
            return response
        watch.expect_status(412, method, url)
        expect(page.get_by_test_id("notice")).to_contain_text(
            "the task changed meanwhile — reloaded", ignore_case=True
        )
        expect(page.get_by_test_id("field-version")).not_to_have_text(sent.strip('"'))
    raise AssertionError(f"{method} {url}: 412 every time")


def screenshot(page: Page, name: str, *, full_page: bool = False) -> None:
    if SCREENSHOTS:
        page.screenshot(path=str(REPO / "docs" / f"console-{name}.png"), full_page=full_page)


def test_a_task_scheduled_in_the_form_is_queued_and_watched_until_it_has_run(
    console: tuple[Page, PageWatch], stack: LocalStackProcess
) -> None:
    page, watch = console
    # Given the console on the local stack, showing the queue the API lists
    for body in BACKGROUND:
        expect(row(page, body["id"])).to_be_visible()
    expect(row(page, "weekly-report").get_by_test_id("task-schedule")).to_have_text(
        "every Friday at 09:00 (cron “0 9 * * 5”), in Europe/Berlin"
    )
    expect(row(page, "heartbeat").get_by_test_id("task-schedule")).to_have_text("every 1 h 30 min")
    expect(row(page, "invoice-ada").get_by_test_id("task-due")).to_have_text("2030-12-01 08:00:00 UTC")
    # When a task due in 3 s is scheduled through the form
    create(page, kind="delay", id="console-soon", delay="3", payload='{"hello": "console"}')
    # Then it is in the queue, first, with its due time in UTC and relative to now
    soon = row(page, "console-soon")
    expect(soon).to_be_visible()
    expect(page.get_by_test_id("task-row").first).to_have_attribute("data-task-id", "console-soon")
    expect(soon.get_by_test_id("task-due")).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))
    expect(soon.get_by_test_id("task-due-relative")).to_have_text(re.compile(r"^(in \d s|now|\d+ s ago)$"))
    expect(soon.get_by_test_id("task-attempts")).to_have_text("0 / 3")
    expect(page.get_by_test_id("notice")).to_contain_text("Scheduled console-soon")
    # When its page is opened from the queue
    soon.get_by_test_id("task-link").click()
    expect(page).to_have_url(re.compile(r"/console#/tasks/console-soon$"))
    expect(page.get_by_test_id("field-id")).to_have_text("console-soon")
    first_status = page.get_by_test_id("field-status").inner_text()
    reads: list[str] = []
    page.on("request", lambda r: reads.append(r.url) if r.url.endswith("/tasks/console-soon") else None)
    # Then the page, polling, shows it succeeded, with its last run
    expect(page.get_by_test_id("field-status")).to_have_text("succeeded", timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("last-run-outcome")).to_have_text("succeeded")
    expect(page.get_by_test_id("last-run-started")).to_contain_text(" UTC (")
    expect(page.get_by_test_id("last-run-finished")).to_contain_text(" ago)")
    expect(page.get_by_test_id("task-polling")).to_be_hidden()
    expect(page.get_by_test_id("task-failure")).to_be_hidden()
    expect(page.get_by_test_id("field-payload")).to_contain_text('"hello": "console"')
    # ... as the API says; a task still queued when its page opened was read again by the page alone
    task = stack.get("console-soon")
    assert task["status"] == "succeeded" and task["last_run"]["outcome"] == "succeeded"
    assert first_status in ("pending", "running", "succeeded")
    if first_status != "succeeded":
        assert reads, "the page did not poll the task"
    # And its run history holds that one run; nothing is upcoming, and nothing can be steered
    expect(page.get_by_test_id("run-row")).to_have_count(1)
    expect(page.get_by_test_id("run-outcome")).to_have_text("succeeded")
    expect(page.get_by_test_id("run-scheduled")).to_have_text(shown_utc(task["last_run"]["scheduled_for"]))
    expect(page.get_by_test_id("history-kept")).to_have_text("1")
    expect(page.get_by_test_id("upcoming-note")).to_have_text("None: the task has finished (succeeded).")
    expect(page.get_by_test_id("upcoming-item")).to_have_count(0)
    expect(page.get_by_test_id("steering-none")).to_be_visible()
    for button in ("pause-button", "resume-button", "skip-button", "run-now-button"):
        expect(page.get_by_test_id(button)).to_be_hidden()
    watch.assert_clean()


def test_a_recurring_task_shows_its_runs_and_is_paused_skipped_run_now_resumed_and_cancelled(
    console: tuple[Page, PageWatch], stack: LocalStackProcess
) -> None:
    page, watch = console
    task_url = f"{stack.api_url}/tasks/console-every"
    # Given a task every 5 s (each start up to 1 s later), scheduled through the form, and its page
    create(page, kind="every", id="console-every", every="5s", jitter="1")
    row(page, "console-every").get_by_test_id("task-link").click()
    expect(page.get_by_test_id("field-jitter")).to_have_text("up to 1 s after each time")
    # Then its next 10 occurrences are listed, 5 s apart, in UTC
    items = page.get_by_test_id("upcoming-item")
    expect(items).to_have_count(10)
    expect(page.get_by_test_id("upcoming-note")).to_have_text("The next 10, wall times in UTC.")
    expect(items.get_by_test_id("occurrence-local")).to_have_text(
        [re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+00:00$")] * 10
    )
    instants = items.locator("[data-testid=occurrence-relative]").evaluate_all(
        "nodes => nodes.map((node) => Date.parse(node.getAttribute('datetime')))"
    )
    assert [round((b - a) / 1000, 3) for a, b in pairwise(instants)] == [5.0] * 9
    # And, watched, its history shows a run that succeeded, with its lateness and the task's summary
    first_run = page.get_by_test_id("run-row").last
    expect(first_run.get_by_test_id("run-outcome")).to_have_text("succeeded", timeout=RUN_TIMEOUT_MS)
    expect(first_run.get_by_test_id("run-number")).to_have_text("1")
    expect(first_run.get_by_test_id("run-lateness")).to_have_text(re.compile(r"^-?\d+(\.\d+)? (ms|s)$"))
    expect(page.get_by_test_id("history-last")).to_have_text(re.compile(r"^-?\d+(\.\d+)? (ms|s)$"))
    expect(page.get_by_test_id("history-p99")).to_have_text(re.compile(r"^-?\d+(\.\d+)? (ms|s)$"))
    expect(page.get_by_test_id("history-kept")).to_have_text(re.compile(r"^[1-9]\d*$"))

    # When it is paused
    pause = page.get_by_test_id("pause-button")
    response = send(page, watch, pause.click, "POST", f"{task_url}/pause")
    assert response.status == 200, response.text()
    # Then the page and the API read it paused, no longer watched; Resume, Skip next, Run now and
    # Cancel are offered, Pause and Reschedule no longer
    expect(page.get_by_test_id("field-status")).to_have_text("paused")
    assert stack.get("console-every")["status"] == "paused"
    expect(page.get_by_test_id("task-polling")).to_be_hidden()
    for shown in ("resume-button", "skip-button", "run-now-button", "cancel-start"):
        expect(page.get_by_test_id(shown)).to_be_visible()
    expect(pause).to_be_hidden()
    expect(page.get_by_test_id("reschedule-form")).to_be_hidden()
    expect(page.get_by_test_id("upcoming-note")).to_contain_text("Paused: none runs until it is resumed")
    # And the queue's status filter "paused" asks the API for paused tasks, and lists it
    page.get_by_test_id("back-to-queue").click()
    expect(row(page, "weekly-report")).to_be_visible()
    expect(row(page, "console-every")).to_have_count(0)
    with page.expect_request(lambda r: "/tasks?" in r.url and "status=paused" in r.url):
        page.get_by_test_id("filter-status").select_option("paused")
    expect(row(page, "console-every").get_by_test_id("task-status")).to_have_text("paused")
    expect(row(page, "weekly-report")).to_have_count(0)
    row(page, "console-every").get_by_test_id("task-link").click()

    # When 0 occurrences are to be skipped, the API's refusal is shown by the buttons
    skip = page.get_by_test_id("skip-button")
    page.get_by_test_id("skip-count").fill("0")
    watch.expect_status(422, "POST", f"{task_url}/skip")
    refused = send(page, watch, skip.click, "POST", f"{task_url}/skip")
    assert refused.status == 422
    expect(page.get_by_test_id("steering-error")).to_have_text(refused.json()["message"])
    # When the next 2 are skipped
    due_before = parse_time(stack.get("console-every")["due"])
    page.get_by_test_id("skip-count").fill("2")
    skipped = send(page, watch, skip.click, "POST", f"{task_url}/skip")
    # Then it is due two (or more, after a run that landed) occurrences later, in the page and the API
    assert skipped.status == 200 and skipped.request.post_data_json == {"count": 2}
    due = skipped.json()["due"]
    steps = (parse_time(due) - due_before) / 5
    assert steps >= 2 and abs(steps - round(steps)) < 1e-3, steps
    expect(page.get_by_test_id("field-due")).to_contain_text(shown_utc(due))
    expect(page.get_by_test_id("steering-error")).to_be_hidden()
    assert stack.get("console-every")["due"] == due

    # When it is run now (still paused)
    runs_before = stack.get("console-every")["runs"]
    ran = send(page, watch, page.get_by_test_id("run-now-button").click, "POST", f"{task_url}/run-now")
    assert ran.status == 200, ran.text()
    run_now_at = ran.json()["run_now_at"]
    assert run_now_at
    # Then the page watches it until that extra run is over: the newest run is the one scheduled at
    # the run-now time (not on the 5 s grid), the count grew, `run_now_at` cleared, Run now is back
    expect(page.get_by_test_id("run-scheduled").first).to_have_text(
        shown_utc(run_now_at), timeout=RUN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("run-now-waiting")).to_be_hidden()
    expect(page.get_by_test_id("run-now-button")).to_be_visible()
    task = stack.get("console-every")
    assert task["run_now_at"] is None and task["status"] == "paused" and task["runs"] > runs_before
    expect(page.get_by_test_id("field-runs")).to_have_text(str(task["runs"]))
    expect(page.get_by_test_id("task-polling")).to_be_hidden()

    # When it is resumed, what fell due meanwhile skipped (the catch-up count only goes with "each"),
    page.get_by_test_id("resume-missed").select_option("each")
    expect(page.get_by_test_id("resume-max-catch-up")).to_be_visible()
    page.get_by_test_id("resume-missed").select_option("skip")
    expect(page.get_by_test_id("resume-max-catch-up")).to_be_hidden()
    resume = page.get_by_test_id("resume-button")
    # ... after another client skipped one more occurrence since the page read the task
    elsewhere = requests.post(f"{task_url}/skip", json={"count": 1}, timeout=30)
    assert elsewhere.status_code == 200, elsewhere.text
    watch.expect_status(412, "POST", f"{task_url}/resume")
    with page.expect_response(lambda r: r.url == f"{task_url}/resume") as stale:
        resume.click()
    # Then the resume was refused (412): the page says so by the buttons and shows the task as it is now
    assert stale.value.status == 412
    expect(page.get_by_test_id("steering-error")).to_have_text("The task changed meanwhile — reloaded.")
    expect(page.get_by_test_id("notice")).to_contain_text(
        "the task changed meanwhile — reloaded", ignore_case=True
    )
    expect(page.get_by_test_id("field-version")).to_have_text(str(elsewhere.json()["version"]))
    expect(page.get_by_test_id("field-due")).to_contain_text(shown_utc(elsewhere.json()["due"]))
    expect(page.get_by_test_id("field-status")).to_have_text("paused")
    # When Resume is clicked again, on the version now shown
    resumed = send(page, watch, resume.click, "POST", f"{task_url}/resume")
    # Then it is queued again from its first occurrence after now, and watched
    assert resumed.status == 200 and resumed.request.post_data_json == {"missed": "skip"}
    assert parse_time(resumed.json()["due"]) > parse_time(resumed.json()["updated_at"])
    expect(page.get_by_test_id("field-status")).to_have_text(re.compile(r"^(pending|running)$"))
    expect(page.get_by_test_id("task-polling")).to_be_visible()
    expect(page.get_by_test_id("upcoming-item")).to_have_count(10)
    expect(page.get_by_test_id("pause-button")).to_be_visible()
    if SCREENSHOTS:  # a few runs in the history
        expect(page.get_by_test_id("run-row").nth(3)).to_be_attached(timeout=RUN_TIMEOUT_MS)
        page.wait_for_timeout(1000)
    screenshot(page, "task", full_page=True)

    # When it is cancelled
    def cancel() -> None:
        if not page.get_by_test_id("cancel-confirm").is_visible():
            page.get_by_test_id("cancel-start").click()
        page.get_by_test_id("cancel-yes").click()

    cancelled = send(page, watch, cancel, "DELETE", task_url)
    # Then it is over: nothing upcoming, nothing to steer
    assert cancelled.status in (202, 204), cancelled.text()
    expect(page.get_by_test_id("field-status")).to_have_text("cancelled")
    assert stack.get("console-every")["status"] == "cancelled"
    expect(page.get_by_test_id("upcoming-note")).to_have_text("None: the task has finished (cancelled).")
    expect(page.get_by_test_id("steering-none")).to_be_visible()
    watch.assert_clean()


def test_the_lateness_of_the_last_hour_is_drawn_as_a_histogram(
    console: tuple[Page, PageWatch], stack: LocalStackProcess
) -> None:
    page, watch = console
    lateness_url = f"{stack.api_url}/lateness?minutes=60"
    # Given runs in the last hour (one of them here), counted by the API
    stack.post({"id": "lateness-probe", "action": "log", "delay_seconds": 0})
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while requests.get(lateness_url, timeout=30).json()["runs"] == 0:
        assert time.monotonic() < deadline, "no run was counted"
        time.sleep(0.25)
    buckets = requests.get(lateness_url, timeout=30).json()["buckets"]
    # When the queue page is opened again (once its first reads are over)
    expect(row(page, "weekly-report")).to_be_visible()
    expect(page.get_by_test_id("lateness-svg")).to_be_attached()
    with page.expect_response(lambda r: r.url == lateness_url):
        page.reload()
    # Then an SVG picture has one bar per bucket of the API, labelled with the bucket's edges
    chart = page.get_by_test_id("lateness-svg")
    expect(chart).to_be_visible()
    assert chart.evaluate("node => node.namespaceURI") == "http://www.w3.org/2000/svg"
    expect(chart.get_by_test_id("lateness-bar")).to_have_count(len(buckets))
    edges = [bucket["le_ms"] for bucket in buckets]
    labels = [f"≤{ms:g} ms" if ms < 1000 else f"≤{ms / 1000:g} s" for ms in edges[:-1]]
    assert edges[-1] is None
    labels.append(">" + labels[-1][1:])
    assert labels[0] == "≤10 ms" and labels[-1] == ">60 s"
    expect(chart.get_by_test_id("lateness-label")).to_have_text(labels)
    # ... the bars' counts adding up to the runs figure, which is not zero, with the percentiles
    drawn = page.evaluate(
        """() => ({
            counts: [...document.querySelectorAll("[data-testid=lateness-bar]")]
                .map((bar) => [Number(bar.dataset.count), Number(bar.getAttribute("height"))]),
            runs: document.querySelector("[data-testid=lateness-runs]").textContent,
            title: document.querySelector("[data-testid=lateness-svg] > title").textContent,
            labelledby: document.querySelector("[data-testid=lateness-svg]").getAttribute("aria-labelledby"),
        })"""
    )
    runs = int(drawn["runs"])
    counts = [count for count, _ in drawn["counts"]]
    heights = [height for _, height in drawn["counts"]]
    assert runs > 0 and sum(counts) == runs
    assert [height > 0 for height in heights] == [count > 0 for count in counts]
    assert heights[counts.index(max(counts))] == max(heights)
    # ... and a title that says it in words, naming the figures shown beside it
    assert drawn["title"].startswith(f"Lateness of the {runs} runs of the last hour: p50 ≤ ")
    assert drawn["labelledby"].split()[0] == "lateness-svg-title"
    for figure in ("lateness-p50", "lateness-p99", "lateness-max"):
        expect(page.get_by_test_id(figure)).to_have_text(re.compile(r"^[≤>] \d+(\.\d+)? (ms|s)$"))
    expect(page.get_by_test_id("lateness-late")).to_have_text(re.compile(r"^\d+$"))
    screenshot(page, "queue")
    watch.assert_clean()


def test_a_preview_shows_the_next_occurrences_and_creates_nothing(
    console: tuple[Page, PageWatch], stack: LocalStackProcess
) -> None:
    page, watch = console
    expect(row(page, "weekly-report")).to_be_visible()
    queued = {
        task["id"] for task in requests.get(f"{stack.api_url}/tasks?limit=500", timeout=30).json()["items"]
    }
    shown = page.get_by_test_id("task-row").count()
    # Given the DST choices, offered for a cron schedule only
    page.get_by_test_id("create-kind").select_option("every")
    expect(page.get_by_test_id("create-dst-skipped")).to_be_disabled()
    # When a cron in Europe/Berlin is previewed
    fill_form(page, kind="cron", cron="0 9 * * 5", timezone="Europe/Berlin", **{"dst-skipped": "shift"})
    expect(page.get_by_test_id("create-dst-repeated")).to_be_enabled()
    with page.expect_request(lambda r: r.method == "POST") as sent:
        page.get_by_test_id("preview-button").click()
    # Then the API was asked for a dry run of what the form holds ...
    body: dict[str, Any] = {
        "action": "log",
        "cron": "0 9 * * 5",
        "timezone": "Europe/Berlin",
        "dst_skipped": "shift",
        "payload": {},
    }
    assert sent.value.url == f"{stack.api_url}/tasks?dry_run=true"
    assert sent.value.post_data_json == body
    # ... and its 5 next occurrences are shown on Berlin's wall clock and in UTC, as the API says
    items = page.get_by_test_id("preview-item")
    expect(items).to_have_count(5)
    preview = requests.post(f"{stack.api_url}/tasks?dry_run=true", json=body, timeout=30).json()
    walls = [re.sub(r"T(\d\d:\d\d:\d\d)([+-])", r" \1 \2", item["local"]) for item in preview["upcoming"]]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d 09:00:00 \+0[12]:00", wall) for wall in walls), walls
    expect(items.get_by_test_id("occurrence-local")).to_have_text(walls)
    expect(items.get_by_test_id("occurrence-utc")).to_have_text(
        [shown_utc(i["scheduled_for"]) for i in preview["upcoming"]]
    )
    expect(page.get_by_test_id("preview-summary")).to_contain_text("in Europe/Berlin")
    expect(page.get_by_test_id("preview-summary")).to_contain_text("Nothing was scheduled.")
    # And nothing was created: the page's queue and the API's are as they were
    expect(page.get_by_test_id("task-row")).to_have_count(shown)
    after = {
        task["id"] for task in requests.get(f"{stack.api_url}/tasks?limit=500", timeout=30).json()["items"]
    }
    assert after == queued
    assert not requests.get(f"{stack.api_url}/tasks/{preview['task']['id']}", timeout=30).ok
    watch.assert_clean()


def test_a_task_is_rescheduled_and_cancelled_with_its_version(
    console: tuple[Page, PageWatch], stack: LocalStackProcess
) -> None:
    page, watch = console
    api = stack.api_url
    # Given a far-future task scheduled through the form, and its page
    create(page, kind="due", id="console-later", due="2031-01-01T09:00:00Z")
    row(page, "console-later").get_by_test_id("task-link").click()
    expect(page.get_by_test_id("field-version")).to_have_text("1")
    expect(page.get_by_test_id("field-due")).to_contain_text("2031-01-01 09:00:00 UTC")
    # When someone else changes the task while the page still shows version 1 (its polls answered
    # with what it had read, until it sends its change)
    seen = stack.get("console-later")
    held = {"on": True}

    def hold_reads(route: Route) -> None:
        if route.request.method == "GET" and held["on"]:
            route.fulfill(status=200, content_type="application/json", body=json.dumps(seen))
            return
        held["on"] = False
        route.continue_()

    page.route(f"{api}/tasks/console-later", hold_reads)
    changed = requests.patch(
        f"{api}/tasks/console-later", json={"payload": {"changed": "elsewhere"}}, headers={"If-Match": '"1"'},
        timeout=30,
    )  # fmt: skip
    assert changed.status_code == 200, changed.text
    # ... and the console's reschedule is sent
    page.get_by_test_id("reschedule-kind").select_option("due")
    page.get_by_test_id("reschedule-due").fill("2031-02-01T10:00:00Z")
    watch.expect_status(412, "PATCH", f"{api}/tasks/console-later")
    with page.expect_request(lambda r: r.method == "PATCH") as stale_patch:
        page.get_by_test_id("reschedule-submit").click()
    # Then it went with the version the page showed, was refused, and the page says so and reloads
    assert stale_patch.value.headers["if-match"] == '"1"'
    expect(page.get_by_test_id("notice")).to_contain_text(
        "the task changed meanwhile — reloaded", ignore_case=True
    )
    expect(page.get_by_test_id("field-version")).to_have_text("2")
    expect(page.get_by_test_id("field-payload")).to_contain_text("elsewhere")
    page.unroute(f"{api}/tasks/console-later")
    # When the reschedule is sent again, on the version now shown
    with page.expect_request(lambda r: r.method == "PATCH") as patch:
        page.get_by_test_id("reschedule-submit").click()
    # Then the task is due at the new time, in the page and in the API
    assert patch.value.headers["if-match"] == '"2"'
    expect(page.get_by_test_id("field-due")).to_contain_text("2031-02-01 10:00:00 UTC")
    expect(page.get_by_test_id("field-version")).to_have_text("3")
    assert parse_time(stack.get("console-later")["due"]) == parse_time("2031-02-01T10:00:00Z")
    # When it is cancelled with the button (and its confirmation)
    page.get_by_test_id("cancel-start").click()
    with page.expect_request(lambda r: r.method == "DELETE") as delete:
        page.get_by_test_id("cancel-yes").click()
    # Then the DELETE named the version shown, the page reads it cancelled, and so does the API
    assert delete.value.headers["if-match"] == '"3"'
    expect(page.get_by_test_id("field-status")).to_have_text("cancelled")
    expect(page.get_by_test_id("cancel-area")).to_be_hidden()
    expect(page.get_by_test_id("reschedule-form")).to_be_hidden()
    assert stack.get("console-later")["status"] == "cancelled"
    # And back on the queue it is gone
    page.get_by_test_id("back-to-queue").click()
    expect(row(page, "weekly-report")).to_be_visible()
    expect(row(page, "console-later")).to_have_count(0)
    watch.assert_clean()


def test_a_bad_cron_is_explained_next_to_the_cron_field(
    console: tuple[Page, PageWatch], stack: LocalStackProcess
) -> None:
    page, watch = console
    body = {"action": "log", "cron": "61 * * * *", "timezone": "Europe/Berlin"}
    refused = requests.post(f"{stack.api_url}/tasks", json=body, timeout=30)
    assert refused.status_code == 422 and refused.json()["field"] == "cron", refused.text
    # When the same task is scheduled through the form
    watch.expect_status(422, "POST", f"{stack.api_url}/tasks")
    create(page, kind="cron", cron=body["cron"], timezone=body["timezone"])
    # Then the API's message is shown next to the cron field, which is marked invalid
    expect(page.get_by_test_id("error-cron")).to_have_text(refused.json()["message"])
    expect(page.get_by_test_id("create-cron")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("error-form")).to_be_hidden()
    expect(page.get_by_test_id("error-timezone")).to_be_hidden()
    # And a payload that is not JSON is refused in the page, next to its field, before any request
    create(page, kind="every", every="5m", payload="{not json")
    expect(page.get_by_test_id("error-payload")).to_contain_text("payload: not valid JSON")
    expect(page.get_by_test_id("error-cron")).to_be_hidden()
    watch.assert_clean()


def test_a_failed_task_shows_its_error(console: tuple[Page, PageWatch], stack: LocalStackProcess) -> None:
    page, watch = console
    # Given a task whose one attempt fails (its webhook has no listener), created over the API
    stack.post({"id": "doomed", "action": "hook", "delay_seconds": 0, "max_attempts": 1})
    # When it is opened by id from the queue page
    page.get_by_test_id("open-id").fill("doomed")
    page.get_by_test_id("open-button").click()
    # Then, once it has run, the page says prominently that it failed, and why
    expect(page.get_by_test_id("field-status")).to_have_text("failed", timeout=RUN_TIMEOUT_MS)
    failure = page.get_by_test_id("task-failure")
    expect(failure).to_be_visible()
    error = stack.get("doomed")["last_run"]["error"]
    assert error
    expect(page.get_by_test_id("task-failure-text")).to_have_text(error)
    expect(page.get_by_test_id("last-run-outcome")).to_have_text("failed")
    expect(page.get_by_test_id("last-run-error")).to_have_text(error)
    # And its run history shows the failed run with that error
    expect(page.get_by_test_id("run-outcome")).to_have_text("failed")
    expect(page.get_by_test_id("run-error")).to_have_text(error)
    # And "Retry now" runs it once more (a run-now; its webhook still has no listener)
    retry = page.get_by_test_id("run-now-button")
    expect(retry).to_have_text("Retry now")
    retry.click()
    expect(page.get_by_test_id("run-outcome")).to_have_count(2, timeout=RUN_TIMEOUT_MS)
    assert stack.get("doomed")["status"] == "failed" and stack.get("doomed")["runs"] == 2
    watch.assert_clean()


def test_filters_and_load_more_follow_the_api_s_pages(
    console: tuple[Page, PageWatch], stack: LocalStackProcess
) -> None:
    page, watch = console
    # Given more queued tasks than one page (50) holds, created over the API meanwhile
    bulk = [f"bulk-{i:02d}" for i in range(55)]
    start = time.time()
    for i, task_id in enumerate(bulk):
        stack.post({"id": task_id, "action": "log", "due": f"2032-01-01T00:{i // 60:02d}:{i % 60:02d}Z"})
    assert time.time() - start < 120
    page.get_by_test_id("refresh").click()
    expect(row(page, "bulk-00")).to_be_visible()
    # When the free-text filter names them
    page.get_by_test_id("filter-text").fill("bulk-")
    # Then only those of the first page show, and "Load more" brings the rest
    shown = page.get_by_test_id("task-row")
    expect(shown.first).to_have_attribute("data-task-id", "bulk-00")
    first_page = shown.count()
    assert 0 < first_page < len(bulk)
    expect(page.get_by_test_id("load-more")).to_be_visible()
    page.get_by_test_id("load-more").click()
    expect(shown).to_have_count(len(bulk))
    expect(page.get_by_test_id("load-more")).to_be_hidden()
    # When the text matches a payload instead, and the action filter is set
    page.get_by_test_id("filter-text").fill("sales")
    expect(page.get_by_test_id("filter-action").locator("option")).to_have_text(["any action", "log"])
    page.get_by_test_id("filter-action").select_option("log")
    # Then only the task whose payload holds it shows
    expect(shown).to_have_count(1)
    expect(shown.first).to_have_attribute("data-task-id", "weekly-report")
    # When the status filter, whose choices are the statuses the API lists, asks for running tasks
    # only (none is running now)
    expect(page.get_by_test_id("filter-status").locator("option")).to_have_text(
        ["pending and running", "pending", "running", "paused"]
    )
    page.get_by_test_id("filter-text").fill("")
    with page.expect_request(lambda r: "status=running" in r.url):
        page.get_by_test_id("filter-status").select_option("running")
    # Then nothing matches, and the page says so
    expect(page.get_by_test_id("queue-empty")).to_be_visible()
    expect(shown).to_have_count(0)
    watch.assert_clean()


def test_behind_a_stage_prefix_the_console_calls_the_api_under_it(
    browser: Browser, stack: LocalStackProcess
) -> None:
    # Given the stack reached under a prefix, as API Gateway's stage URL puts `/v1` before every
    # route (the browser's requests to /v1/... are sent on to the local stack's root)
    prefixed: list[str] = []

    def strip_stage(route: Route) -> None:
        prefixed.append(route.request.url)
        route.continue_(url=route.request.url.replace(f"{stack.api_url}/v1/", f"{stack.api_url}/", 1))

    with watched_page(browser) as (page, watch):
        page.route(f"{stack.api_url}/v1/**", strip_stage)
        # When the console is opened there
        page.goto(f"{stack.api_url}/v1/console")
        # Then its files and its API calls all go under the prefix, and the queue shows
        expect(row(page, "weekly-report")).to_be_visible()
        modules = sorted(path.name for path in CONSOLE_STATIC.glob("*.js"))
        assert {f"{stack.api_url}/v1/console/{name}" for name in modules} <= set(prefixed)
        assert f"{stack.api_url}/v1/console/console.css" in prefixed
        assert f"{stack.api_url}/v1/openapi.json" in prefixed
        assert f"{stack.api_url}/v1/tasks?limit=50" in prefixed
        # And the API base it derives, and its words for times and schedules, are these
        found = page.evaluate(
            """async () => {
                const module = (name) => import(new URL(`console/${name}`, document.baseURI).href);
                const m = { ...(await module("api.js")), ...(await module("format.js")) };
                const now = Date.parse("2030-01-01T00:00:00Z");
                return {
                    bases: ["/console", "/console/", "/v1/console", "/v1/console/", "/console/console"]
                        .map(m.apiBase),
                    relative: ["2030-01-01T00:03:00Z", "2029-12-31T23:59:48Z", "2030-01-01T00:00:00.4Z",
                               "2030-01-02T01:30:00Z"].map((t) => m.relative(t, now)),
                    utc: m.utc("2030-12-01T09:00:00+01:00"),
                    cron: ["0 9 * * 5", "30 7 * * 1-5", "*/15 * * * *", "0 0 1 * *", "5 4 * * SUN,SAT",
                           "0 9 1 1 *", "@daily"].map(m.describeCron),
                    seconds: [0.0002, 0.0043, 0.12, 1.25, 120, null].map(m.seconds),
                    labels: m.bucketLabels([{le_ms: 10}, {le_ms: 2500}, {le_ms: 60000}, {le_ms: null}]),
                    walls: ["2030-03-31T02:30:00.5+02:00", "2030-12-01T08:00:00Z", "2030-03-31T02:30:00"]
                        .map(m.wallTime),
                    dst: ["shifted", "repeated-first", "repeated-second", null].map(m.dstWords),
                };
            }"""
        )
        assert found == {
            "bases": ["", "", "/v1", "/v1", "/console"],
            "relative": ["in 3 min", "12 s ago", "now", "in 1 d 1 h"],
            "utc": "2030-12-01 08:00:00 UTC",
            "cron": [
                "every Friday at 09:00",
                "on weekdays at 07:30",
                "every 15 minutes",
                "on day 1 of every month at 00:00",
                "every Sunday, Saturday at 04:05",
                None,
                None,
            ],
            "seconds": ["0.20 ms", "4.3 ms", "120 ms", "1.25 s", "2 min", "—"],
            "labels": ["≤10 ms", "≤2.5 s", "≤60 s", ">60 s"],
            "walls": ["2030-03-31 02:30:00 +02:00", "2030-12-01 08:00:00 +00:00", "2030-03-31 02:30"],
            "dst": [
                "DST gap: runs after it",
                "DST repeat: first of two passes",
                "DST repeat: second of two passes",
                None,
            ],
        }
        watch.assert_clean()


def test_the_task_statuses_are_the_ones_the_api_s_openapi_document_declares(
    browser: Browser, stack: LocalStackProcess
) -> None:
    # Given an API whose document does not answer at first, and then declares one more status a
    # task can be listed in (as a later API could), though not one GET /tasks lists unasked
    document_url = f"{stack.api_url}/openapi.json"
    asked: list[str] = []

    def document(route: Route) -> None:
        asked.append(route.request.url)
        if len(asked) == 1:
            route.fulfill(status=503, json={"error": "service_unavailable", "message": "busy", "field": None})
            return
        served = route.fetch()
        declared = served.json()
        for schema in ("TaskStatus", "ListableStatus"):
            declared["components"]["schemas"][schema]["enum"].append("waiting")
        route.fulfill(response=served, json=declared)

    with watched_page(browser) as (page, watch):
        page.route(document_url, document)
        watch.expect_status(503, "GET", document_url)
        # When the console is opened
        page.goto(f"{stack.api_url}/console")
        # Then it says it could not read the document, and tries again until it has
        expect(page.get_by_test_id("notice")).to_contain_text("Could not read the API's description")
        expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=15_000)
        expect(row(page, "weekly-report")).to_be_visible()
        # ... and the status filter offers what the document declares, read once (unfiltered: the
        # statuses GET /tasks lists unasked, its x-queued-statuses)
        expect(page.get_by_test_id("filter-status").locator("option")).to_have_text(
            ["pending and running", "pending", "running", "paused", "waiting"]
        )
        assert asked == [document_url, document_url]
        watch.assert_clean()


def test_the_api_url_opens_the_documentation_with_every_operation(
    browser: Browser, stack: LocalStackProcess
) -> None:
    document = requests.get(f"{stack.api_url}/openapi.json", timeout=10).json()
    operations = sum(len(methods) for methods in document["paths"].values())
    with watched_page(browser) as (page, watch):
        # When a browser opens the API's own URL
        page.goto(stack.api_url)
        # Then it lands on Swagger UI, which draws every operation of the served document
        expect(page).to_have_url(f"{stack.api_url}/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("nexttick")
        expect(page.locator(".opblock")).to_have_count(operations)
        expect(page.locator(".opblock-summary-path[data-path='/tasks/{id}']").first).to_be_visible()
        watch.assert_clean()
