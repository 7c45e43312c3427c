"""The web server's sign-in, against aiohttp's test server (a real HTTP socket).

No app process is started here (the websocket refused below never gets that far); the
browser tests run the app.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import ClientTimeout, WSMsgType, WSServerHandshakeError, web
from aiohttp.test_utils import TestClient, TestServer

from tests.serve.conftest import study_words
from tui.serve import web as web_module
from tui.serve.access import AccessList
from tui.serve.backoff import Backoff
from tui.serve.web import (
    COOKIE,
    MAX_APPS_PER_CODER,
    REFUSAL_BODY,
    REFUSAL_STATUS,
    Guard,
    LiveApp,
    RedactedAccessLogger,
    ServeOptions,
    Server,
    app_command,
)

#: The test client of an aiohttp application.
Client = TestClient[web.Request, web.Application]


class Recorder:
    """Stands in for ``asyncio.sleep``: records each back-off delay, waits none."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def slept() -> Recorder:
    return Recorder()


@pytest.fixture
def server(study_path: Path, slept: Recorder, monkeypatch: pytest.MonkeyPatch) -> Server:
    # A held refusal waits in one sleep here (the recorder's, which returns at once).
    monkeypatch.setattr(web_module, "WAIT_STEP", 3600.0)
    guard = Guard(AccessList(study_path), secure=False, backoff=Backoff(free=3), sleep=slept)
    options = ServeOptions(study=study_path, title=study_path.stem, app_args=("--no-model",))
    return Server(options, guard, watch_interval=3600)


@pytest.fixture
async def client(server: Server) -> AsyncIterator[Client]:
    test_server = TestServer(server.application())
    # As the command's runner does (the command's own log is checked in test_serve_cli).
    await test_server.start_server(access_log_class=RedactedAccessLogger)
    async with TestClient(test_server) as c:
        yield c


async def refusal_of(client: Client, url: str, **kwargs: object) -> tuple[int, str, dict[str, str]]:
    async with client.get(url, allow_redirects=False, **kwargs) as response:  # type: ignore[arg-type]
        headers = {k: v for k, v in response.headers.items() if k not in ("Date",)}
        return response.status, await response.text(), headers


async def test_every_request_without_a_valid_token_gets_the_same_refusal(
    client: Client, study_path: Path
) -> None:
    access = AccessList(study_path)
    revoked = access.add("bo")
    access.revoke("bo")
    access.add("ana")
    urls = [
        "/",
        "/?token=",
        "/?token=wrong",
        f"/?token={revoked}",
        "/static/js/textual.js",
        "/static/",
        "/ws",
        "/download/abc",
        "/no/such/page",
        "/?token=wrong&coder=ana",
    ]
    answers = [await refusal_of(client, url) for url in urls]
    assert {a[0] for a in answers} == {REFUSAL_STATUS}
    assert {a[1] for a in answers} == {REFUSAL_BODY}
    first = answers[0][2]
    assert all(a[2] == first for a in answers), "the headers differ between refusals"
    assert "Set-Cookie" not in first
    for word in study_words(study_path):
        assert word not in REFUSAL_BODY


async def test_a_valid_link_signs_in_with_a_strict_http_only_cookie(
    client: Client, study_path: Path
) -> None:
    token = AccessList(study_path).add("ana")
    async with client.get(f"/?token={token}") as response:
        assert response.status == 200
        page = await response.text()
        cookie = response.headers["Set-Cookie"]
    assert "harbourview-survey" in page
    assert "for ana" in page
    assert token not in page
    assert token not in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Secure" not in cookie
    assert "history.replaceState" in page  # the token leaves the address bar
    # The cookie alone now opens the page and the scripts, never a folder listing.
    async with client.get("/") as response:
        assert response.status == 200
    async with client.get("/static/js/textual.js") as response:
        assert response.status == 200
        assert len(await response.read()) > 10_000
    for listing in ("/static/", "/static/js/", "/static/../app_service.py"):
        async with client.get(listing) as response:
            assert response.status == 404, listing


async def test_the_coder_comes_from_the_token_not_from_the_address(
    client: Client, study_path: Path
) -> None:
    token = AccessList(study_path).add("ana")
    AccessList(study_path).add("bo")
    async with client.get(f"/?token={token}&coder=bo&session=bo") as response:
        assert response.status == 200
        page = await response.text()
    assert "for ana" in page
    assert "for bo" not in page


async def test_a_token_only_signs_in_on_the_page(client: Client, study_path: Path) -> None:
    token = AccessList(study_path).add("ana")
    status, body, _ = await refusal_of(client, f"/static/js/textual.js?token={token}")
    assert (status, body) == (REFUSAL_STATUS, REFUSAL_BODY)


async def test_a_forged_cookie_is_refused_like_no_token(client: Client) -> None:
    status, body, _ = await refusal_of(client, "/", cookies={COOKIE: "made-up"})
    assert (status, body) == (REFUSAL_STATUS, REFUSAL_BODY)


async def test_an_empty_token_leaves_the_session_signed_in(
    client: Client, study_path: Path
) -> None:
    token = AccessList(study_path).add("ana")
    async with client.get(f"/?token={token}") as response:
        assert response.status == 200
    async with client.get("/?token=") as response:  # a link cut short, with the cookie
        assert response.status == 200
        assert "for ana" in await response.text()
    client.session.cookie_jar.clear()
    status, body, _ = await refusal_of(client, "/?token=")  # and without it: refused
    assert (status, body) == (REFUSAL_STATUS, REFUSAL_BODY)


async def test_repeated_failures_are_slowed_and_a_valid_link_is_not(
    client: Client, study_path: Path, slept: Recorder
) -> None:
    token = AccessList(study_path).add("ana")
    for _ in range(6):
        await refusal_of(client, "/?token=guess")
    assert slept.delays == [0.5, 1.0, 2.0]  # three free, then doubling
    async with client.get(f"/?token={token}") as response:
        assert response.status == 200
    assert slept.delays == [0.5, 1.0, 2.0]
    client.session.cookie_jar.clear()
    await refusal_of(client, "/")  # no token at all counts the same as a wrong one
    assert slept.delays[-1] == 4.0


class Gate:
    """Stands in for ``asyncio.sleep``: each step of a hold takes a moment, and the
    back-off below is days long, so a held refusal stays held until its client goes
    away or the server stops."""

    def __init__(self) -> None:
        self.waits = 0

    async def __call__(self, seconds: float) -> None:
        self.waits += 1
        await asyncio.sleep(0.01)


async def gated_client(study_path: Path, gate: Gate) -> tuple[Client, Guard]:
    backoff = Backoff(free=0, base=1e6, cap=1e6)
    guard = Guard(AccessList(study_path), secure=False, backoff=backoff, sleep=gate)
    options = ServeOptions(study=study_path, title=study_path.stem, app_args=("--no-model",))
    test_server = TestServer(Server(options, guard, watch_interval=3600).application())
    await test_server.start_server()
    client: Client = TestClient(test_server)
    await client.start_server()
    return client, guard


async def until(condition: Callable[[], object], what: str) -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_flood_of_refusals_is_answered_at_once_but_one(study_path: Path) -> None:
    """A client failing in parallel has one refusal held for its back-off; every other is
    answered at once (none queue), and a valid link signs in meanwhile."""
    gate = Gate()
    client, guard = await gated_client(study_path, gate)
    token = AccessList(study_path).add("ana")
    try:
        held = asyncio.create_task(refusal_of(client, "/?token=first"))
        await until(lambda: guard._waiting, "a held refusal")
        answers = await asyncio.gather(*(refusal_of(client, f"/?token=g{i}") for i in range(50)))
        assert {(status, body) for status, body, _ in answers} == {(REFUSAL_STATUS, REFUSAL_BODY)}
        assert not held.done()  # the first is still held, alone
        assert len(guard._waiting) == 1
        async with client.get(f"/?token={token}") as response:
            assert response.status == 200
        await guard.stop()
        assert (await asyncio.wait_for(held, 30))[0] == REFUSAL_STATUS
    finally:
        await client.close()


async def test_a_held_refusal_is_dropped_when_its_client_goes_away(study_path: Path) -> None:
    gate = Gate()
    client, guard = await gated_client(study_path, gate)
    try:
        with pytest.raises(TimeoutError):
            async with client.get("/?token=guess", timeout=ClientTimeout(total=0.3)) as response:
                await response.read()
        await until(lambda: not guard._waiting, "the abandoned refusal to be dropped")
    finally:
        await client.close()


async def test_stopping_answers_the_held_refusals(study_path: Path) -> None:
    gate = Gate()
    client, guard = await gated_client(study_path, gate)
    try:
        held = asyncio.create_task(refusal_of(client, "/?token=guess"))
        await until(lambda: guard._waiting, "a held refusal")
        await guard.stop()
        assert (await asyncio.wait_for(held, 5))[0] == REFUSAL_STATUS
    finally:
        await client.close()


def test_the_backoff_keeps_a_bounded_number_of_failures_per_client() -> None:
    backoff = Backoff(free=3, base=0.5, cap=30.0)
    for _ in range(20_000):
        delay = backoff.failed("10.0.0.1")
    assert delay == 30.0
    assert backoff.failures("10.0.0.1") < 40


async def test_revoking_a_link_ends_its_browser_sessions(
    client: Client, server: Server, study_path: Path
) -> None:
    access = AccessList(study_path)
    token = access.add("ana")
    other = access.add("bo")
    async with client.get(f"/?token={token}") as response:
        assert response.status == 200
    access.revoke("ana")
    await server.end_revoked()
    status, body, _ = await refusal_of(client, "/")
    assert (status, body) == (REFUSAL_STATUS, REFUSAL_BODY)
    async with client.get(f"/?token={other}") as response:
        assert response.status == 200  # bo is untouched


@pytest.mark.parametrize("origin", [None, "http://evil.example", "null", "http://127.0.0.1:1"])
async def test_the_websocket_refuses_a_foreign_origin(
    client: Client, server: Server, study_path: Path, origin: str | None
) -> None:
    token = AccessList(study_path).add("ana")
    async with client.get(f"/?token={token}") as response:
        assert response.status == 200
    headers = {} if origin is None else {"Origin": origin}
    with pytest.raises(WSServerHandshakeError) as refused:
        await client.ws_connect("/ws", headers=headers)
    assert refused.value.status == REFUSAL_STATUS
    assert server.live == []  # no app process was started


async def test_no_token_reaches_the_access_log(
    client: Client, study_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = AccessList(study_path).add("ana")
    with caplog.at_level(logging.INFO):
        async with client.get(f"/?token={token}") as response:
            assert response.status == 200
        await refusal_of(client, f"/?token={token[:-1]}x")
    access = [r.getMessage() for r in caplog.records if r.name == "aiohttp.access"]
    assert len(access) == 2
    assert all('"GET /?…"' in line for line in access)
    assert not any(token[:20] in r.getMessage() for r in caplog.records)


async def test_under_tls_the_cookie_is_secure(study_path: Path) -> None:
    guard = Guard(AccessList(study_path), secure=True)
    server = Server(ServeOptions(study=study_path, secure=True), guard)
    token = AccessList(study_path).add("ana")
    async with TestClient(TestServer(server.application())) as c, c.get(f"/?token={token}") as r:
        assert "Secure" in r.headers["Set-Cookie"]


def test_the_app_command_is_fixed_and_quoted(study_path: Path) -> None:
    options = ServeOptions(study=study_path, app_args=("--model", "fake"))
    command = app_command(options, "ana; rm -rf / #")
    assert command.startswith("exec ")
    assert "'--coder=ana; rm -rf / #'" in command
    assert command.endswith("--model fake")


async def test_one_coder_cannot_start_apps_without_end(
    client: Client, server: Server, study_path: Path
) -> None:
    token = AccessList(study_path).add("ana")
    async with client.get(f"/?token={token}") as response:
        assert response.status == 200
    grant = AccessList(study_path).check(token)
    assert grant is not None
    running = [LiveApp(grant, socket=web.WebSocketResponse()) for _ in range(MAX_APPS_PER_CODER)]
    server.live.extend(running)
    origin = f"http://{client.host}:{client.port}"
    with pytest.raises(WSServerHandshakeError) as refused:
        await client.ws_connect("/ws", headers={"Origin": origin})
    assert refused.value.status == 429
    assert server.live == running  # nothing was started
    server.live.clear()


async def test_an_app_that_ends_on_its_own_closes_the_browsers_socket(
    client: Client, study_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_module, "app_command", lambda options, coder: "exit 3")
    token = AccessList(study_path).add("ana")
    async with client.get(f"/?token={token}") as response:
        assert response.status == 200
    socket = await client.ws_connect(
        "/ws", headers={"Origin": f"http://{client.host}:{client.port}"}
    )
    message = await socket.receive(timeout=60)
    assert message.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING)
    await socket.close()
