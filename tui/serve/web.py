"""The web server of ``codecurve serve``: sign-in, the page, and one app process per socket.

Every request passes :class:`Guard` first. Only two things let one through: a valid
token on ``GET /`` (the coder's personal link), which starts a browser session and sets
its cookie, or that session's cookie. Anything else, whatever the path, gets the same
refusal (:data:`REFUSAL_STATUS`, :data:`REFUSAL_BODY`, the same headers) whether the token
was missing, wrong or revoked; the refusal names nothing of the study. A client that
keeps failing has its next refusal held for its back-off delay, but only one at a time:
every other refusal of that client is answered at once, at most :data:`MAX_WAITING`
are held in all, and a held one is dropped as soon as its client goes away or the
server stops. A flood of bad requests is thus answered as it comes, never queued. The
cookie is HttpOnly, SameSite=Strict, Secure under TLS, and holds a random session id,
not the token.

The websocket (``/ws``) checks its Origin against the page's host, then runs the app
through textual-serve's :class:`~textual_serve.app_service.AppService` with a command
line fixed by the server: the study and the app options given to ``codecurve serve``,
and the coder of the session (never anything the browser sends). The socket closing
ends the app process. Every second the access list is read again: the live sessions and
apps of a revoked link end at once.

The access log names the path without its query string, so tokens never reach a log.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import secrets
import shlex
import sys
from asyncio.subprocess import Process
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.abc import AbstractAccessLogger
from textual_serve import app_service as textual_serve_app_service
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from tui.serve.access import AccessList, Grant
from tui.serve.backoff import Backoff

log = logging.getLogger("codecurve.serve")

#: The one refusal: no token, a wrong one, a revoked one, a foreign Origin, any path.
REFUSAL_STATUS = 403
REFUSAL_BODY = (
    "Not signed in. Open the personal link you were given; if it no longer works, ask "
    "whoever runs the server for a new one.\n"
)
#: The signed-in grant, on each request the guard let through.
GRANT = web.RequestKey("codecurve.grant", Grant)
#: The session cookie's name.
COOKIE = "codecurve_session"
#: Refusals held for a back-off at once, over all clients (one per client at most).
MAX_WAITING = 64
#: Seconds between two looks, while a refusal is held, at whether its client has gone.
WAIT_STEP = 0.25
#: Seconds between two readings of the access list (revocations end live sessions).
WATCH_INTERVAL = 1.0
#: Apps one coder may have running at once (tabs, a reload overlapping its old page).
MAX_APPS_PER_CODER = 4
#: Seconds an app process has to quit after its socket closed, before it is killed.
STOP_GRACE = 10.0

_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}

_STATIC = Path(textual_serve_app_service.__file__).parent / "static"


@dataclass(frozen=True)
class ServeOptions:
    """What the server serves, all fixed when it starts.

    Attributes:
        study: The study (an absolute path).
        app_args: Options passed to every app process (``--model``, ``--no-model``, ...).
        secure: Served over TLS (cookies are Secure).
        title: The page's title (shown only after sign-in).
    """

    study: Path
    app_args: tuple[str, ...] = ()
    secure: bool = False
    title: str = "codecurve"


def app_command(options: ServeOptions, coder: str) -> str:
    """The app process's command line: fixed by the server, every word quoted."""
    argv = [
        sys.executable,
        "-m",
        "tui.serve.child",
        str(options.study),
        f"--coder={coder}",  # one argument, whatever the name
        *options.app_args,
    ]
    return "exec " + shlex.join(argv)


class AppProcess(AppService):
    """textual-serve's app service, which can also be waited for and killed.

    textual-serve offers no public handle on the task that runs the app (``start``
    creates it) nor on the process: the run is followed here through its public
    ``start`` and ``run``, and the process is the service's typed ``_process`` attribute,
    read in one place (:meth:`process`) so that mypy sees it and an upgrade that renames
    it fails the type check instead of silently leaving a process behind.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._started = False
        self._finished = asyncio.Event()

    async def start(self, width: int, height: int) -> None:
        await super().start(width, height)
        self._started = True  # the run's task exists now; it sets _finished when done

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            self._finished.set()

    async def ended(self) -> None:
        """Return when the app process has ended (quit, crashed or never started)."""
        if self._started:
            await self._finished.wait()

    def process(self) -> Process | None:
        """The app's process, None before it was started."""
        return self._process

    async def reap(self) -> None:
        """Close the app's stdin and wait for its process, so nothing of it is left."""
        process = self.process()
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE)
        except TimeoutError:
            self.kill()
            await process.wait()

    def kill(self) -> None:
        process = self.process()
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()


@dataclass
class LiveApp:
    """A browser's socket and the app process it drives."""

    grant: Grant
    socket: web.WebSocketResponse
    service: AppProcess | None = None
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    closing: bool = False


class Guard:
    """Sign-in: tokens, session cookies, the refusal and its back-off."""

    def __init__(
        self,
        access: AccessList,
        *,
        secure: bool,
        backoff: Backoff | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.access = access
        self.secure = secure
        self.backoff = backoff or Backoff()
        self.sleep = sleep
        self.sessions: dict[str, Grant] = {}
        #: Clients with a refusal held now (one each).
        self._waiting: set[str] = set()
        self._stopping = False

    def admit(self, request: web.Request) -> tuple[Grant | None, str | None]:
        """The grant a request carries, and a new session id when it signs in now."""
        grants = self.access.grants()
        # An empty ``?token=`` (a link cut short) signs nobody in, nor out: the
        # session's cookie still counts.
        token = request.query.get("token") or None
        if token is not None:
            if request.path != "/" or request.method != "GET":
                return None, None
            grant = self.access.check(token, grants)
            if grant is None:
                return None, None
            sid = secrets.token_urlsafe(32)
            self.sessions[sid] = grant
            log.info("%s signed in", grant.coder)
            return grant, sid
        cookie = request.cookies.get(COOKIE)
        grant = self.sessions.get(cookie) if cookie else None
        if grant is None or grant not in grants:
            return None, None
        return grant, None

    def forget(self, grants: frozenset[Grant]) -> None:
        """Drop the browser sessions of links no longer live."""
        for sid, grant in list(self.sessions.items()):
            if grant not in grants:
                del self.sessions[sid]

    async def refuse(self, request: web.Request) -> web.Response:
        """The one refusal: held for this client's back-off delay when it is the only
        one of the client's held and there is room, at once otherwise."""
        client = request.remote or "?"
        delay = self.backoff.failed(client)
        if delay:
            failures = self.backoff.failures(client)
            over = failures - self.backoff.free
            if over & (over - 1) == 0:  # the first delayed failure, then 2, 4, 8 ... over
                log.warning("%s: %d failed sign-ins; slowing it down", client, failures)
        held = client in self._waiting or len(self._waiting) >= MAX_WAITING
        if not delay or held or self._stopping:
            return refusal()
        self._waiting.add(client)
        try:
            await self._hold(request, delay)
        finally:
            self._waiting.discard(client)
        return refusal()

    async def _hold(self, request: web.Request, delay: float) -> None:
        """Wait out ``delay`` in short steps; no longer once the client has gone or the
        server stops."""
        left = delay
        while left > 0 and not self._stopping:
            transport = request.transport
            if transport is None or transport.is_closing():
                return
            step = min(WAIT_STEP, left)
            await self.sleep(step)
            left -= step

    async def stop(self, app: web.Application | None = None) -> None:
        """Answer every held refusal now (the server is stopping)."""
        self._stopping = True

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        grant, sid = self.admit(request)
        if grant is None:
            return await self.refuse(request)
        request[GRANT] = grant
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            response = web.Response(status=exc.status, text=f"{exc.status}: {exc.reason}\n")
        if sid is not None and not response.prepared:
            response.set_cookie(
                COOKIE, sid, httponly=True, samesite="Strict", secure=self.secure, path="/"
            )
        if not response.prepared:
            for name, value in _HEADERS.items():
                response.headers.setdefault(name, value)
        return response


def refusal() -> web.Response:
    """The same refusal for every request that is not signed in."""
    return web.Response(
        status=REFUSAL_STATUS, text=REFUSAL_BODY, content_type="text/plain", headers=_HEADERS
    )


class Server:
    """The routes, the live apps, and the watch over the access list."""

    def __init__(
        self,
        options: ServeOptions,
        guard: Guard,
        *,
        watch_interval: float = WATCH_INTERVAL,
    ) -> None:
        self.options = options
        self.guard = guard
        self.watch_interval = watch_interval
        self.live: list[LiveApp] = []
        self.downloads = DownloadManager()
        self.static = {
            path.relative_to(_STATIC).as_posix(): path
            for path in _STATIC.rglob("*")
            if path.is_file() and path.suffix in (".js", ".css", ".ttf", ".png")
        }
        self._watch: asyncio.Task[None] | None = None

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self.guard.middleware])
        app.add_routes(
            [
                web.get("/", self.page),
                web.get("/ws", self.websocket),
                web.get("/static/{name:.+}", self.static_file),
                web.get("/download/{key}", self.download),
            ]
        )
        app.on_startup.append(self._start_watch)
        app.on_shutdown.append(self.guard.stop)
        app.on_shutdown.append(self._shutdown)
        return app

    # -- pages -------------------------------------------------------------------------

    async def page(self, request: web.Request) -> web.Response:
        nonce = secrets.token_urlsafe(16)
        body = PAGE.format(
            title=html.escape(self.options.title),
            nonce=nonce,
            coder=html.escape(request[GRANT].coder),
        )
        response = web.Response(text=body, content_type="text/html")
        response.headers["Content-Security-Policy"] = (
            f"default-src 'self'; script-src 'self' 'nonce-{nonce}'; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; "
            "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        )
        return response

    async def static_file(self, request: web.Request) -> web.StreamResponse:
        path = self.static.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound()
        return web.FileResponse(path)

    async def download(self, request: web.Request) -> web.StreamResponse:
        """A file the coder's own app delivers to the browser (an export)."""
        key = request.match_info["key"]
        coder = request[GRANT].coder
        try:
            meta = await self.downloads.get_download_metadata(key)
        except KeyError:
            raise web.HTTPNotFound() from None
        owner = next((a for a in self.live if a.service is meta.app_service), None)
        if owner is None or owner.grant.coder != coder:
            raise web.HTTPNotFound()
        response = web.StreamResponse()
        content_type = meta.mime_type + (f"; charset={meta.encoding}" if meta.encoding else "")
        response.headers["Content-Type"] = content_type
        disposition = "inline" if meta.open_method == "browser" else "attachment"
        name = json.dumps(meta.file_name, ensure_ascii=True)
        response.headers["Content-Disposition"] = f"{disposition}; filename={name}"
        for header, value in _HEADERS.items():
            response.headers[header] = value
        await response.prepare(request)
        async for chunk in self.downloads.download(key):
            await response.write(chunk)
        await response.write_eof()
        return response

    # -- the app over a websocket --------------------------------------------------------

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        grant: Grant = request[GRANT]
        if not same_origin(request):
            log.warning("refused a websocket from origin %r", request.headers.get("Origin"))
            return refusal()
        if sum(1 for a in self.live if a.grant.coder == grant.coder) >= MAX_APPS_PER_CODER:
            log.warning(
                "%s: already %d apps running; refused another", grant.coder, MAX_APPS_PER_CODER
            )
            return web.Response(status=429, text="Too many open tabs: close one first.\n")
        socket = web.WebSocketResponse(heartbeat=15, max_msg_size=1 << 20)
        await socket.prepare(request)
        width = _size(request.query.get("width"), 80)
        height = _size(request.query.get("height"), 24)
        with contextlib.suppress(TimeoutError):
            await self._after_closing(grant.coder)
        live = LiveApp(grant, socket)
        self.live.append(live)
        log.info("%s: app started", grant.coder)

        async def close() -> None:
            await socket.close()

        try:
            live.service = AppProcess(
                app_command(self.options, grant.coder),
                write_bytes=socket.send_bytes,
                write_str=socket.send_str,
                close=close,
                download_manager=self.downloads,
            )
            await live.service.start(width, height)
            await self._relay_until_ended(socket, live.service)
        except asyncio.CancelledError:
            await socket.close()
            raise
        except Exception as exc:  # the app could not be started or talked to: say so, once
            log.warning("%s: the app failed: %s", grant.coder, exc)
            await socket.close(code=WSCloseCode.INTERNAL_ERROR, message=b"the app failed")
        finally:
            live.closing = True
            await self._stop(live)
            self.live.remove(live)
            live.stopped.set()
            log.info("%s: app ended", grant.coder)
        return socket

    async def _relay_until_ended(self, socket: web.WebSocketResponse, service: AppProcess) -> None:
        """Relay until the browser goes or the app ends on its own (then the socket closes,
        and the browser says the session ended instead of waiting for it)."""
        relay = asyncio.create_task(self._relay(socket, service))
        ended = asyncio.create_task(service.ended())
        try:
            done, _ = await asyncio.wait({relay, ended}, return_when=asyncio.FIRST_COMPLETED)
            if ended in done:
                await socket.close(code=WSCloseCode.GOING_AWAY, message=b"the app ended")
            await relay
        finally:
            relay.cancel()
            ended.cancel()

    async def _relay(self, socket: web.WebSocketResponse, service: AppService) -> None:
        """What the browser sends, passed on to the app: keys, sizes, focus, pings."""
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            if kind == "stdin" and isinstance(data, str):
                await service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await service.set_terminal_size(
                    _size(data.get("width"), 80), _size(data.get("height"), 24)
                )
            elif kind == "ping":
                await socket.send_json(["pong", data])
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    async def _stop(self, live: LiveApp) -> None:
        service = live.service
        if service is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(service.stop()), STOP_GRACE)
        except (TimeoutError, asyncio.CancelledError):
            service.kill()
        except Exception:  # a process that died on its own: nothing left to stop
            service.kill()
        with contextlib.suppress(Exception):
            await service.reap()

    async def _after_closing(self, coder: str) -> None:
        """Wait for this coder's apps that are already closing (a reloaded page)."""
        closing = [a.stopped.wait() for a in self.live if a.grant.coder == coder and a.closing]
        if closing:
            await asyncio.wait_for(asyncio.gather(*closing), STOP_GRACE + 5)

    # -- revocation and shutdown ----------------------------------------------------------

    async def end_revoked(self) -> int:
        """End the browser sessions and apps of links no longer live; how many apps."""
        grants = self.guard.access.grants()
        self.guard.forget(grants)
        ended = 0
        for live in list(self.live):
            if live.grant not in grants and not live.closing:
                live.closing = True
                ended += 1
                log.info("%s: link revoked, ending the app", live.grant.coder)
                await live.socket.close(code=WSCloseCode.POLICY_VIOLATION, message=b"revoked")
        return ended

    async def _start_watch(self, app: web.Application) -> None:
        self._watch = asyncio.create_task(self._watching())

    async def _watching(self) -> None:
        while True:
            await asyncio.sleep(self.watch_interval)
            try:
                await self.end_revoked()
            except Exception as exc:  # an unreadable access list: keep what is live
                log.warning("cannot read the access list: %s", exc)

    async def _shutdown(self, app: web.Application) -> None:
        if self._watch is not None:
            self._watch.cancel()
        for live in list(self.live):
            live.closing = True
            await live.socket.close(code=WSCloseCode.GOING_AWAY, message=b"server stopped")
        for live in list(self.live):
            await live.stopped.wait()


def same_origin(request: web.Request) -> bool:
    """The socket's Origin is the page's own host (a browser always sends Origin)."""
    origin = request.headers.get("Origin")
    if not origin:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc == request.host


def _size(value: object, default: int) -> int:
    try:
        number = int(str(value))
    except ValueError:
        return default
    return max(10, min(number, 1000))


class RedactedAccessLogger(AbstractAccessLogger):
    """The access log without query strings: a token in a link never reaches a log."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s%s" %s %.3fs',
            request.remote,
            request.method,
            request.path,
            "?…" if request.query_string else "",
            response.status,
            time,
        )


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/css/xterm.css">
<script src="/static/js/textual.js"></script>
<style>
@font-face {{ font-family: "Roboto Mono";
  src: url("/static/fonts/RobotoMono-VariableFont_wght.ttf"); }}
@font-face {{ font-family: "Roboto Mono"; font-style: italic;
  src: url("/static/fonts/RobotoMono-Italic-VariableFont_wght.ttf"); }}
html, body {{ margin: 0; height: 100%; background: #0c181f; }}
.dialog-container {{ position: absolute; width: 100vw; height: 100vh; display: flex;
  align-items: center; justify-content: center; z-index: 10; }}
.intro {{ padding: 24px 40px; font: 16px "Roboto Mono", monospace; color: #eee;
  background: #12232d; text-align: center; }}
body.-first-byte .intro-dialog {{ display: none; }}
body .textual-terminal {{ opacity: 0; height: 100vh; }}
body.-first-byte .textual-terminal {{ opacity: 1; }}
.closed-dialog {{ display: none; }}
body.-closed .closed-dialog {{ display: flex; }}
button {{ margin: 16px auto 0; display: block; padding: 8px 24px; font: inherit; }}
</style>
</head>
<body>
<div class="dialog-container intro-dialog">
<div class="intro">Opening {title} for {coder}…</div></div>
<div class="dialog-container closed-dialog"><div class="intro">Session ended.
<button type="button" id="restart">Open again</button></div></div>
<div id="terminal" class="textual-terminal" data-font-size="16"></div>
<script nonce="{nonce}">
history.replaceState(null, "", "/");
document.getElementById("terminal").dataset.sessionWebsocketUrl =
  (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
document.getElementById("restart").addEventListener("click", () => location.reload());
</script>
</body>
</html>
"""
