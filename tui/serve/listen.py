"""Where the server listens: the address rules, TLS, and running until Ctrl-C.

The server binds 127.0.0.1 unless told otherwise. Any address that other machines can
reach (``--host 0.0.0.0``, a LAN address, a host name) is refused unless the connection
is encrypted (``--certfile``/``--keyfile``) or the caller says it is not and a reverse
proxy in front encrypts it (``--insecure-behind-proxy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import signal
import ssl
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from codebooks.errors import InputError
from tui.serve.web import RedactedAccessLogger

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host``."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_address(host: str, *, tls: bool, insecure: bool) -> None:
    """Refuse to listen unencrypted where other machines can reach the server.

    Raises:
        InputError: ``host`` is not loopback, without TLS or ``--insecure-behind-proxy``.
    """
    if is_loopback(host) or tls or insecure:
        return
    raise InputError(
        f"--host {host} lets other machines connect, so the connection must be encrypted: "
        "give --certfile and --keyfile, or put a reverse proxy with TLS in front and say "
        "so with --insecure-behind-proxy (see docs/team.md)"
    )


def tls_context(certfile: Path, keyfile: Path | None) -> ssl.SSLContext:
    """A server TLS context from a certificate and its key.

    Raises:
        InputError: a file that is missing or not a certificate or key (one line).
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile, keyfile)
    except FileNotFoundError as exc:
        raise InputError(f"{exc.filename or certfile}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        reason = str(getattr(exc, "reason", None) or exc.strerror or exc)
        if "KEY_VALUES_MISMATCH" in reason:
            reason = "the key is not the certificate's"
        elif "PEM lib" in reason or "NO_START_LINE" in reason:
            reason = "not a PEM certificate with its private key"
        raise InputError(
            f"the certificate {certfile} (key {keyfile or certfile}) does not load: {reason}"
        ) from None
    return context


def serve_until_stopped(
    app: web.Application,
    *,
    host: str,
    port: int,
    ssl_context: ssl.SSLContext | None,
    ready: Callable[[str], None],
) -> None:
    """Listen and serve until SIGINT or SIGTERM; ``ready(url)`` once listening.

    Raises:
        InputError: the port is in use or may not be bound.
    """
    asyncio.run(_serve(app, host=host, port=port, ssl_context=ssl_context, ready=ready))


async def _serve(
    app: web.Application,
    *,
    host: str,
    port: int,
    ssl_context: ssl.SSLContext | None,
    ready: Callable[[str], None],
) -> None:
    runner = web.AppRunner(app, access_log_class=RedactedAccessLogger, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
        try:
            await site.start()
        except OSError as exc:
            raise InputError(bind_message(exc, host, port)) from None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        scheme = "https" if ssl_context is not None else "http"
        bound = runner.addresses[0]
        shown = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
        ready(f"{scheme}://{shown}:{bound[1]}")
        await stop.wait()
    finally:
        await runner.cleanup()


def bind_message(exc: OSError, host: str, port: int) -> str:
    """Why ``host:port`` could not be bound, in one line."""
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is in use on {host}; choose another with --port"
    if exc.errno == errno.EACCES:
        return f"port {port} may not be bound by this user; choose one above 1023 with --port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
