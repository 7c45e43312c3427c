"""``codecurve serve STUDY``: the app in a browser for the coders who have a link.

The web server is :mod:`tui.serve`'s; this module parses the options, checks them, and
says where the server listens, or prints a new coder's link once.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from pathlib import Path
from typing import Any

from tui.commands import UsageError
from tui.commands.types import CONTEXTS, positive_int, whole_number

DESCRIPTION = """\
Serve the review app to a browser: each coder opens their personal link and codes as
themselves, one app per browser tab, all on this machine's study (and model). Add a
coder once; the link is printed once and only its hash is kept (in STUDY.access):

  codecurve serve survey.codecurve --add-coder ana
  codecurve serve survey.codecurve --revoke-coder ana
  codecurve serve survey.codecurve --port 8000

The server listens on 127.0.0.1 (reach it over an SSH tunnel, or behind a reverse
proxy). Another address needs --certfile/--keyfile, or --insecure-behind-proxy when a
proxy in front of it encrypts the connection: see docs/team.md.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve the app to the coders' browsers (personal links)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default %(default)s)"
    )
    parser.add_argument(
        "--port", type=whole_number(0, 65535), default=8000, help="port (default %(default)s)"
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--add-coder", metavar="NAME", help="print a new link for NAME, then exit")
    who.add_argument("--revoke-coder", metavar="NAME", help="revoke NAME's link, then exit")
    who.add_argument("--list-coders", action="store_true", help="the coders with a link")
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="the address coders open, for the printed link (default: from --host, --port "
        "and TLS), e.g. https://coding.example.edu behind a proxy",
    )
    parser.add_argument("--certfile", type=Path, help="TLS certificate (PEM)")
    parser.add_argument("--keyfile", type=Path, help="its private key (default: in --certfile)")
    parser.add_argument(
        "--insecure-behind-proxy",
        action="store_true",
        help="allow a non-local --host without TLS: a reverse proxy in front encrypts",
    )
    parser.add_argument("--model", metavar="MODEL", help="the model each app loads (as review)")
    parser.add_argument(
        "--no-model", action="store_true", help="code with the scores already in the study"
    )
    parser.add_argument("--context", choices=CONTEXTS, metavar="LEVEL", default=None)
    parser.add_argument("--batch-size", type=positive_int, metavar="N", default=None)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui.serve.access import AccessList

    if args.public_url and not str(args.public_url).startswith(("http://", "https://")):
        raise UsageError(f"--public-url must start with https:// (or http://): {args.public_url}")
    study = check_study(args.study)
    access = AccessList(study)
    if args.add_coder is not None:
        token = access.add(args.add_coder)
        sys.stderr.write(
            f"a link for {args.add_coder} (shown this once; keep it private, it signs in as "
            f"{args.add_coder}):\n"
        )
        sys.stdout.write(f"{link_base(args)}/?token={token}\n")
        return 0
    if args.revoke_coder is not None:
        access.revoke(args.revoke_coder)
        sys.stderr.write(
            f"revoked {args.revoke_coder}'s link; a running server ends their sessions "
            "within a second\n"
        )
        return 0
    if args.list_coders:
        for coder in access.coders():
            sys.stdout.write(coder + "\n")
        return 0
    return serve(study, access, args)


def check_study(path: Path) -> Path:
    """The study's absolute path, once it opened (read-only) as a study."""
    from study import Study

    with Study.open(path, read_only=True):
        pass
    return path.resolve()


def link_base(args: argparse.Namespace) -> str:
    if args.public_url:
        return str(args.public_url).rstrip("/")
    scheme = "https" if args.certfile else "http"
    host = args.host
    if host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    elif ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{args.port}"


def serve(study: Path, access: Any, args: argparse.Namespace) -> int:
    from tui.serve.listen import check_address, serve_until_stopped, tls_context
    from tui.serve.web import Guard, ServeOptions, Server

    if args.keyfile is not None and args.certfile is None:
        raise UsageError("--keyfile goes with --certfile")
    if args.no_model and args.model:
        raise UsageError("--model and --no-model contradict each other: give one")
    check_address(args.host, tls=args.certfile is not None, insecure=args.insecure_behind_proxy)
    context = tls_context(args.certfile, args.keyfile) if args.certfile else None
    app_args: list[str] = []
    if args.no_model:
        app_args.append("--no-model")
    elif args.model:
        app_args += ["--model", args.model]
    if args.context:
        app_args += ["--context", args.context]
    if args.batch_size:
        app_args += ["--batch-size", str(args.batch_size)]
    options = ServeOptions(
        study=study, app_args=tuple(app_args), secure=context is not None, title=study.stem
    )
    server = Server(options, Guard(access, secure=options.secure))
    logging.getLogger("codecurve.serve").setLevel(logging.INFO)
    coders = access.coders()

    def ready(url: str) -> None:
        who = ", ".join(coders) if coders else "nobody yet: add a coder with --add-coder NAME"
        sys.stderr.write(f"serving {study.name} on {url} for {who} (Ctrl-C stops)\n")
        sys.stderr.flush()

    serve_until_stopped(
        server.application(), host=args.host, port=args.port, ssl_context=context, ready=ready
    )
    return 0
