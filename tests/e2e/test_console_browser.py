"""The web console in a real headless Chromium, against `nexttick local` started as a user starts it
(the installed entry point, a fresh state directory, free ports): a task scheduled through the form
is queued and watched until it has run; another is rescheduled (after a 412 from a change made
elsewhere meanwhile) and cancelled with its version; a bad cron is explained next to its field; a
failed task shows its error; filters and "Load more" work over the API's pages. No page may log an
error or fail a request beyond the error answers a test provokes.

`NEXTTICK_SCREENSHOTS=1` also writes docs/console-queue.png and docs/console-task.png (1280x800).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Locator, Page, Route, expect

from bench.localstack import REPO, LocalStackProcess, parse_time, stack_environment
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


@pytest.fixture
def console(browser: Browser, stack: LocalStackProcess) -> Iterator[tuple[Page, PageWatch]]:
    """A fresh page on the console, watched for errors from its first request on."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(15_000)
    watch = PageWatch.attach(page)
    page.goto(f"{stack.api_url}/console")
    expect(page.locator("body[data-ready=true]")).to_be_attached()
    try:
        yield page, watch
    finally:
        context.close()


def row(page: Page, task_id: str) -> Locator:
    return page.locator(f'[data-testid=task-row][data-task-id="{task_id}"]')


def create(page: Page, *, kind: str, **fields: str) -> None:
    """Fill the create form (action `log`) and submit it."""
    page.get_by_test_id("create-action").fill("log")
    page.get_by_test_id("create-kind").select_option(kind)
    for name, value in fields.items():
        page.get_by_test_id(f"create-{name}").fill(value)
    page.get_by_test_id("create-submit").click()


def screenshot(page: Page, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=str(REPO / "docs" / f"console-{name}.png"))


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
    screenshot(page, "queue")
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
    # And the places a later change fills say only that they are not available yet
    for section in ("steering", "run-history", "upcoming-runs"):
        expect(page.get_by_test_id(section)).to_contain_text("not available yet", ignore_case=True)
    screenshot(page, "task")
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
    # When the status filter asks the API for running tasks only (none is running now)
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
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    watch = PageWatch.attach(page)
    prefixed: list[str] = []

    def strip_stage(route: Route) -> None:
        prefixed.append(route.request.url)
        route.continue_(url=route.request.url.replace(f"{stack.api_url}/v1/", f"{stack.api_url}/", 1))

    try:
        page.route(f"{stack.api_url}/v1/**", strip_stage)
        # When the console is opened there
        page.goto(f"{stack.api_url}/v1/console")
        # Then its files and its API calls all go under the prefix, and the queue shows
        expect(row(page, "weekly-report")).to_be_visible()
        assert f"{stack.api_url}/v1/console/console.js" in prefixed
        assert f"{stack.api_url}/v1/console/console.css" in prefixed
        assert f"{stack.api_url}/v1/tasks?limit=50" in prefixed
        # And the API base it derives, and its words for times and schedules, are these
        found = page.evaluate(
            """async () => {
                const m = await import(new URL("console/console.js", document.baseURI).href);
                const now = Date.parse("2030-01-01T00:00:00Z");
                return {
                    bases: ["/console", "/console/", "/v1/console", "/v1/console/", "/console/console"]
                        .map(m.apiBase),
                    relative: ["2030-01-01T00:03:00Z", "2029-12-31T23:59:48Z", "2030-01-01T00:00:00.4Z",
                               "2030-01-02T01:30:00Z"].map((t) => m.relative(t, now)),
                    utc: m.utc("2030-12-01T09:00:00+01:00"),
                    cron: ["0 9 * * 5", "30 7 * * 1-5", "*/15 * * * *", "0 0 1 * *", "5 4 * * SUN,SAT",
                           "0 9 1 1 *", "@daily"].map(m.describeCron),
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
        }
        watch.assert_clean()
    finally:
        context.close()
