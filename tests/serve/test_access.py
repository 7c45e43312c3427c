"""The coders' links: only a hash is kept, a revoked or wrong token opens nothing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from codebooks.errors import InputError
from tui.serve.access import AccessList, Grant, access_path, check_coder_name, digest_of
from tui.serve.backoff import Backoff


def test_a_token_opens_its_coder_and_only_its_hash_is_kept(study_path: Path) -> None:
    access = AccessList(study_path)
    token = access.add("ana")
    other = access.add("bo")
    assert len(token) >= 43
    assert token != other
    assert access.check(token) == Grant("ana", digest_of(token))
    assert access.check(other) == Grant("bo", digest_of(other))
    raw = access_path(study_path).read_bytes()
    assert token.encode() not in raw
    assert other.encode() not in raw
    assert digest_of(token).encode() in raw
    assert stat.S_IMODE(access_path(study_path).stat().st_mode) == 0o600
    assert access.coders() == ["ana", "bo"]


@pytest.mark.parametrize("presented", ["", "x", "ana", "A" * 43, "A" * 10_000])
def test_a_wrong_token_opens_nothing(study_path: Path, presented: str) -> None:
    access = AccessList(study_path)
    access.add("ana")
    assert access.check(presented) is None


def test_revoking_ends_a_link_for_good(study_path: Path) -> None:
    access = AccessList(study_path)
    old = access.add("ana")
    with pytest.raises(InputError, match="already has a link"):
        access.add("ana")
    access.revoke("ana")
    assert access.check(old) is None
    new = access.add("ana")
    assert access.check(new) is not None
    assert access.check(old) is None
    with pytest.raises(InputError, match=r"'cy' has no link to revoke \(coders with links: 'ana'"):
        access.revoke("cy")


def test_no_access_file_means_nobody_gets_in(study_path: Path) -> None:
    access = AccessList(study_path)
    assert access.grants() == frozenset()
    assert access.check("anything") is None
    assert not access_path(study_path).exists()  # reading creates nothing


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "cannot be empty"),
        ("   ", "cannot be empty"),
        ("a\x1bb", "control characters"),
        ("ana\n", "control characters"),
        ("a\u200bb", "control characters"),
        (" ana", "start or end with spaces"),
        ("x" * 65, "at most 64"),
        ("--no-model", "cannot start with '-'"),
        ("-ana", "cannot start with '-'"),
        ("consensus", "reconciliation records under"),
        ("Consensus", "reconciliation records under"),
    ],
)
def test_bad_coder_names_are_refused(name: str, reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        check_coder_name(name)


@pytest.mark.parametrize("name", ["ana", "Ana María", "j.smith@uni.edu", "coder-2"])
def test_ordinary_names_pass(name: str) -> None:
    assert check_coder_name(name) == name


def test_failures_are_free_at_first_then_slowed_twice_as_long_each_time() -> None:
    now = [0.0]
    backoff = Backoff(free=3, base=0.5, cap=4.0, window=60.0, clock=lambda: now[0])
    delays = [backoff.failed("10.0.0.1") for _ in range(8)]
    assert delays == [0, 0, 0, 0.5, 1.0, 2.0, 4.0, 4.0]
    assert backoff.failed("10.0.0.2") == 0  # another client is not slowed
    now[0] = 61.0
    assert backoff.failed("10.0.0.1") == 0  # the old failures are forgotten
    assert backoff.failures("10.0.0.1") == 1


def test_the_backoff_remembers_a_bounded_number_of_clients() -> None:
    backoff = Backoff(free=0, clients=100)
    for i in range(1000):
        backoff.failed(f"client-{i}")
    assert backoff.failures("client-999") == 1
    assert backoff.failures("client-0") == 0
