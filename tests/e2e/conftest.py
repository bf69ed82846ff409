"""Fixtures for the end-to-end tests: a headless Debian Chromium driven by Playwright (sync API).

The browser is the system one (/usr/bin/chromium, or $CHROMIUM_PATH); `playwright install` is never used.
Without a browser the tests are skipped, unless REQUIRE_BROWSER=1 (CI), which turns the skip into a failure.
"""

import os
from pathlib import Path

import pytest

CHROMIUM_PATH = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PHONE_VIEWPORT = {"width": 390, "height": 844}
SCREENSHOT_DIR = Path(os.environ.get("E2E_SCREENSHOT_DIR", "/tmp"))


def _browser_required() -> bool:
    return os.environ.get("REQUIRE_BROWSER", "") == "1"


def _unavailable(reason: str):
    if _browser_required():
        pytest.fail(f"{reason} (REQUIRE_BROWSER=1, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(f"{reason}; set REQUIRE_BROWSER=1 to make this a failure")


@pytest.fixture(autouse=True)
def _allow_django_in_playwright_loop(monkeypatch):
    # Playwright's sync API keeps an asyncio loop in this thread, so Django would refuse ORM calls
    # from the test body with SynchronousOnlyOperation. Scoped to the e2e tests only.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def chromium_executable() -> str:
    if not (Path(CHROMIUM_PATH).is_file() and os.access(CHROMIUM_PATH, os.X_OK)):
        _unavailable(f"Chromium not found at {CHROMIUM_PATH}")
    return CHROMIUM_PATH


@pytest.fixture
def browser(chromium_executable):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def new_phone_page(browser):
    """A fresh page (own cookies) with a phone-size viewport: new_phone_page()."""
    contexts = []

    def make():
        context = browser.new_context(
            viewport=PHONE_VIEWPORT, device_scale_factor=2, is_mobile=True, has_touch=True, locale="en-US"
        )
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def screenshot():
    """Save a full-page screenshot as /tmp/e2e-<name>.png (or under $E2E_SCREENSHOT_DIR)."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SCREENSHOT_DIR / f"e2e-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
