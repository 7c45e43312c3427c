"""The served app in a real browser: Debian's chromium, driven by selenium.

``make browser`` installs chromium and chromium-driver from the system packages; without
them these tests are skipped. Each test starts ``codecurve serve`` (with the fake
backend) on 127.0.0.1 and waits for what the browser shows or the study holds, never for
a stretch of time.
"""

from __future__ import annotations

import contextlib
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from study.store import Study
from tests.serve.conftest import study_words
from tests.serve.served import Served, serving, wait_until
from tui.serve.access import AccessList
from tui.serve.web import REFUSAL_BODY, REFUSAL_STATUS

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
        reason="needs Debian's chromium and chromium-driver (make browser)",
    ),
]

webdriver = pytest.importorskip("selenium.webdriver")

Browser = object  # selenium's WebDriver; kept loose so the module imports without it


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    """Where the browsers save what they download."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


@pytest.fixture
def browsers(downloads: Path) -> Iterator[Callable[[], object]]:
    """Start headless chromium browsers, each with a fresh profile; all quit at the end."""
    from selenium.webdriver.chrome.service import Service

    started: list[object] = []
    folders: list[tempfile.TemporaryDirectory[str]] = []

    def start() -> object:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,800",
        ):
            options.add_argument(flag)
        folder = tempfile.TemporaryDirectory(prefix="codecurve-chromium-")
        folders.append(folder)
        options.add_argument(f"--user-data-dir={folder.name}")
        options.add_experimental_option(
            "prefs",
            {"download.default_directory": str(downloads), "download.prompt_for_download": False},
        )
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": TAP})
        started.append(driver)
        return driver

    yield start
    for driver in started:
        with contextlib.suppress(Exception):
            driver.quit()  # type: ignore[attr-defined]
    for folder in folders:
        folder.cleanup()


#: Keeps, in ``window.codecurveScreen``, the text of what the app sends to the browser's
#: terminal (escape sequences and all): the terminal itself draws on a canvas.
TAP = """
(() => {
  const Native = window.WebSocket;
  window.codecurveScreen = "";
  window.WebSocket = function (url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    const decoder = new TextDecoder();
    socket.addEventListener("message", (event) => {
      if (typeof event.data !== "string") {
        window.codecurveScreen += decoder.decode(event.data, { stream: true });
      }
    });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
})();
"""


def screen_text(driver: object, *, clear: bool = False) -> str:
    """What the app has drawn since the page opened (or since the last ``clear``)."""
    script = "const t = window.codecurveScreen || ''; "
    if clear:
        script += "window.codecurveScreen = ''; "
    return str(driver.execute_script(script + "return t;"))  # type: ignore[attr-defined]


def wait_for_text(driver: object, text: str, timeout: float = 120.0) -> None:
    wait_until(lambda: text in screen_text(driver), timeout, what=f"{text!r} in the browser")


def body_class(driver: object) -> str:
    return str(driver.execute_script("return document.body.className"))  # type: ignore[attr-defined]


def wait_for_app(driver: object) -> None:
    """The app's first screen has reached the browser's terminal."""
    wait_until(lambda: "-first-byte" in body_class(driver), what="the app in the browser")


def press(driver: object, keys: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")  # type: ignore[attr-defined]
    box.send_keys(keys)


def decisions_of(study: Path) -> dict[str, int]:
    """Each coder's number of decisions (read without the writer's lock)."""
    with Study.open(study, read_only=True) as s:
        return {coder: s.decisions.count(coder=coder) for coder in s.decisions.coders()}


def status_of(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def link(served: Served, token: str) -> str:
    return f"{served.url}/?token={token}"


def test_a_coders_link_opens_the_app_and_a_key_records_their_decision(
    study_path: Path, browsers: Callable[[], object], tmp_path: Path
) -> None:
    token = AccessList(study_path).add("ana")
    with serving(study_path, "--model", "fake") as served:
        driver = browsers()
        driver.get(link(served, token))  # type: ignore[attr-defined]
        wait_for_app(driver)
        wait_for_text(driver, "Work survey")  # the review screen, its codebook
        wait_for_text(driver, " decided (0%)")  # and its status line
        assert driver.current_url == served.url + "/"  # type: ignore[attr-defined]
        assert token not in driver.page_source  # type: ignore[attr-defined]
        press(driver, "1")
        wait_until(lambda: decisions_of(study_path) == {"ana": 1}, what="ana's decision")
        shot = tmp_path / "served.png"
        driver.save_screenshot(str(shot))  # type: ignore[attr-defined]
        assert shot.stat().st_size > 10_000
        driver.quit()  # type: ignore[attr-defined]
        wait_until(lambda: "ana: app ended" in served.log, what="the app to end with the tab")


def test_an_export_is_written_beside_the_study_and_downloaded(
    study_path: Path, browsers: Callable[[], object], downloads: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    token = AccessList(study_path).add("ana")
    with serving(study_path, "--no-model") as served:
        driver = browsers()
        driver.get(link(served, token))  # type: ignore[attr-defined]
        wait_for_app(driver)
        wait_for_text(driver, "decided")
        screen_text(driver, clear=True)
        press(driver, "e")
        wait_for_text(driver, "Layout")  # the export dialog is open
        press(driver, Keys.TAB + Keys.TAB)  # to the file
        wait_for_text(driver, "enter in File exports")
        press(driver, Keys.ENTER)
        got = downloads / "harbourview-survey-coded_long.csv"
        wait_until(got.exists, what="the export's download")
        wait_until(lambda: "/download/" in served.log, what="the download's request")
    written = study_path.with_name("harbourview-survey-exports") / "ana" / got.name
    assert got.read_bytes() == written.read_bytes()


def test_no_wrong_or_revoked_token_shows_nothing_of_the_study(
    study_path: Path, browsers: Callable[[], object]
) -> None:
    access = AccessList(study_path)
    revoked = access.add("bo")
    access.revoke("bo")
    access.add("ana")
    words = study_words(study_path)
    with serving(study_path, "--model", "fake") as served:
        driver = browsers()
        for url in (served.url + "/", link(served, "wrong"), link(served, revoked)):
            assert status_of(url) == (REFUSAL_STATUS, REFUSAL_BODY)
            driver.get(url)  # type: ignore[attr-defined]
            shown = driver.find_element("tag name", "body").text  # type: ignore[attr-defined]
            assert shown.strip() == REFUSAL_BODY.strip()
            source = driver.page_source  # type: ignore[attr-defined]
            assert not [w for w in words if w in source]
    assert "app started" not in served.log


def test_revoking_a_link_ends_the_coders_open_app(
    study_path: Path, browsers: Callable[[], object]
) -> None:
    access = AccessList(study_path)
    token = access.add("ana")
    with serving(study_path, "--model", "fake") as served:
        driver = browsers()
        driver.get(link(served, token))  # type: ignore[attr-defined]
        wait_for_app(driver)
        access.revoke("ana")
        wait_until(lambda: "-closed" in body_class(driver), what="the session to end")
        wait_until(lambda: "ana: app ended" in served.log, what="the app process to end")
        driver.refresh()  # type: ignore[attr-defined]
        assert REFUSAL_BODY.strip() in driver.page_source  # type: ignore[attr-defined]
    assert decisions_of(study_path) == {}


def test_two_coders_code_at_once_in_two_browsers(
    study_path: Path, browsers: Callable[[], object]
) -> None:
    access = AccessList(study_path)
    tokens = {coder: access.add(coder) for coder in ("ana", "bo")}
    with serving(study_path, "--model", "fake") as served:
        drivers = {coder: browsers() for coder in tokens}
        for coder, driver in drivers.items():
            driver.get(link(served, tokens[coder]))  # type: ignore[attr-defined]
            wait_for_app(driver)
        for driver in drivers.values():
            try:
                wait_for_text(driver, " decided (", timeout=90)  # each on the review screen
            except AssertionError:
                raise AssertionError(f"an app did not open:\n{served.log}") from None
        wait_until(lambda: served.log.count("app started") == 2, what="two apps")
        press(drivers["ana"], "1")
        wait_until(lambda: decisions_of(study_path).get("ana") == 1, what="ana's decision")
        press(drivers["bo"], "0")
        try:
            wait_until(lambda: decisions_of(study_path) == {"ana": 1, "bo": 1}, timeout=60)
        except AssertionError:
            raise AssertionError(f"no decision of bo beside ana's:\n{served.log}") from None
