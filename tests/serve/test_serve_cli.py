"""``codecurve serve``: links printed once, bad input in one line, a real server's log."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.serve.served import serving, wait_until
from tui.cli import main
from tui.serve.access import AccessList
from tui.serve.web import REFUSAL_BODY


def status_of(argv: list[str]) -> int:
    """The exit status, whether ``main`` returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def add(study: Path, coder: str, capsys: pytest.CaptureFixture[str], *more: str) -> str:
    assert main(["serve", str(study), "--add-coder", coder, *more]) == 0
    out = capsys.readouterr().out.strip()
    assert out.count("\n") == 0
    return out


def test_add_coder_prints_a_link_once_and_revoke_ends_it(
    study_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = add(study_path, "ana", capsys)
    assert link.startswith("http://127.0.0.1:8000/?token=")
    token = link.split("token=", 1)[1]
    assert AccessList(study_path).check(token) is not None
    assert add(study_path, "bo", capsys, "--port", "9001").startswith("http://127.0.0.1:9001/")
    assert add(study_path, "cy", capsys, "--public-url", "https://code.example.edu/").startswith(
        "https://code.example.edu/?token="
    )
    assert main(["serve", str(study_path), "--list-coders"]) == 0
    assert capsys.readouterr().out.split() == ["ana", "bo", "cy"]
    assert main(["serve", str(study_path), "--revoke-coder", "ana"]) == 0
    assert AccessList(study_path).check(token) is None


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--add-coder", ""], 1, "a coder name cannot be empty"),
        (["--add-coder", "a\tb"], 1, "control characters"),
        (["--add-coder", "consensus"], 1, "reconciliation records under"),
        (["--add-coder=--no-model"], 1, "cannot start with '-'"),
        (["--revoke-coder", "nobody"], 1, "'nobody' has no link to revoke"),
        (["--host", "0.0.0.0"], 1, "must be encrypted: give --certfile"),
        (["--host", "192.0.2.7"], 1, "must be encrypted"),
        (["--keyfile", "k.pem"], 2, "--keyfile goes with --certfile"),
        (["--port", "70000"], 2, "--port"),
        (["--add-coder", "a", "--revoke-coder", "b"], 2, "not allowed with"),
        (["--add-coder", "a", "--public-url", "coding.example.edu"], 2, "must start with"),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_status(
    study_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], status: int, message: str
) -> None:
    assert status_of(["serve", str(study_path), *args]) == status
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_a_certificate_that_does_not_load(
    study_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "cert.pem"
    junk.write_text("not a certificate\n")
    assert main(["serve", str(study_path), "--certfile", str(junk)]) == 1
    err = capsys.readouterr().err
    assert "does not load: not a PEM certificate with its private key" in err
    assert err.count("\n") == 1
    assert main(["serve", str(study_path), "--certfile", str(tmp_path / "none.pem")]) == 1
    assert "none.pem: no such file" in capsys.readouterr().err


def test_a_port_in_use(study_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(study_path), "--port", str(port), "--no-model"]) == 1
    err = capsys.readouterr().err
    assert (
        err == f"codecurve: error: port {port} is in use on 127.0.0.1; choose another with --port\n"
    )


def test_not_a_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(tmp_path / "missing.codecurve"), "--add-coder", "ana"]) == 1
    assert "no such study" in capsys.readouterr().err
    assert not (tmp_path / "missing.codecurve.access").exists()


def fetch(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, context=context, timeout=60) as response:
            return response.status, response.read().decode(), response.headers["Set-Cookie"]
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), ""


@pytest.mark.slow
def test_a_real_server_keeps_tokens_out_of_its_log(
    study_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = add(study_path, "ana", capsys).split("token=", 1)[1]
    with serving(study_path, "--no-model") as served:
        assert fetch(served.url + "/") == (403, REFUSAL_BODY, "")
        assert fetch(served.url + "/?token=" + token[:-2] + "zz")[:2] == (403, REFUSAL_BODY)
        status, page, cookie = fetch(served.url + "/?token=" + token)
        assert status == 200
        assert "harbourview-survey" in page
        assert "HttpOnly" in cookie
    log = served.log
    assert "ana signed in" in log
    assert '"GET /?…" 200' in log
    assert token not in log
    assert token[:12] not in log


@pytest.mark.slow
def test_tls_serves_with_a_secure_cookie(
    study_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip("openssl cannot make a test certificate here")
    token = add(study_path, "ana", capsys, "--certfile", str(cert)).split("token=", 1)[1]
    with serving(study_path, "--no-model", "--certfile", str(cert), "--keyfile", str(key)) as s:
        assert s.url.startswith("https://")
        trusting = ssl.create_default_context(cafile=str(cert))
        trusting.check_hostname = False
        status, _, cookie = fetch(s.url + "/?token=" + token, trusting)
        assert status == 200
        assert "Secure" in cookie
        assert "SameSite=Strict" in cookie
        with pytest.raises(OSError, match=r"(?i)closed|reset|refused"):  # no plain http
            urllib.request.urlopen(s.url.replace("https", "http") + "/", timeout=30)


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux ``/proc``)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
async def test_an_app_ends_when_its_server_is_killed(
    study_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import aiohttp

    token = add(study_path, "ana", capsys).split("token=", 1)[1]
    with serving(study_path, "--no-model") as served:
        jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP address
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            async with session.get(f"{served.url}/?token={token}") as response:
                assert response.status == 200
            socket = await session.ws_connect(f"{served.url}/ws", headers={"Origin": served.url})
            first = await socket.receive(timeout=120)  # the app's first screen
            assert first.type == aiohttp.WSMsgType.BINARY
            apps = children_of(served.process.pid)
            assert len(apps) == 1
            os.kill(served.process.pid, signal.SIGKILL)
            served.process.wait()
            wait_until(lambda: not alive(apps[0]), timeout=60, what="the orphaned app to end")
            await socket.close()
