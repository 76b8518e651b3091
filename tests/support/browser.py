"""A real headless Chromium for browser tests: Debian's `/usr/bin/chromium` driven by Playwright
(never a browser Playwright downloads; `make test` installs Chromium where the machine allows it),
and a watch over a page for what a user would see go wrong: script errors, console errors and
requests that failed or were answered with an error status."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Page,
    Request,
    Response,
    ViewportSize,
    sync_playwright,
)

CHROMIUM = Path("/usr/bin/chromium")
# Headless, no GPU, and nothing the browser would fetch on its own (updates, sync, QUIC probes).
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}  # also the screenshots' size
# What Chromium logs to the console for a response with an error status (a fetch's 4xx included).
_ERROR_STATUS = re.compile(r"^Failed to load resource: the server responded with a status of (\d+)")


def require_chromium() -> None:
    """Skip the calling module when Debian's Chromium is not installed."""
    if not CHROMIUM.is_file() and shutil.which(str(CHROMIUM)) is None:
        pytest.skip(
            f"browser tests need Chromium at {CHROMIUM} (`make test` installs it as root with apt-get: "
            "apt-get install -y --no-install-recommends chromium)",
            allow_module_level=True,
        )


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageWatch:
    """Everything that went wrong on a page. Error statuses the test provokes on purpose are
    declared with `expect_status` and must then be seen exactly as often."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    error_responses: list[tuple[int, str, str]] = field(default_factory=list)  # status, method, url
    expected: list[tuple[int, str, str]] = field(default_factory=list)

    @classmethod
    def attach(cls, page: Page) -> PageWatch:
        watch = cls()
        page.on("console", watch._console)
        page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
        page.on("requestfailed", watch._request_failed)
        page.on("response", watch._response)
        return watch

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(f"{message.text} ({message.location.get('url')})")

    def _request_failed(self, request: Request) -> None:
        self.failed_requests.append(f"{request.method} {request.url}: {request.failure}")

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.error_responses.append((response.status, response.request.method, response.url))

    def expect_status(self, status: int, method: str, url: str) -> None:
        """The next error answer the test provokes on purpose (and its console line)."""
        self.expected.append((status, method, url))

    def assert_clean(self) -> None:
        assert self.page_errors == [], self.page_errors
        assert self.failed_requests == [], self.failed_requests
        assert sorted(self.error_responses) == sorted(self.expected), self.error_responses
        # Chromium reports each error answer on the console too: those expected, nothing else.
        expected_statuses = {status for status, _, _ in self.expected}
        unexpected = [
            line
            for line in self.console_errors
            if not ((found := _ERROR_STATUS.match(line)) and int(found.group(1)) in expected_statuses)
        ]
        assert unexpected == [], unexpected
        assert len(self.console_errors) == len(self.expected), self.console_errors
