"""The transformers path's device and dtype choice, with the devices' availability mocked
(no CUDA or Apple GPU is on the test machine)."""

from __future__ import annotations

import pytest

from scoring import ScoringError
from scoring.devices import pick_device

torch = pytest.importorskip("torch")


@pytest.fixture
def has(monkeypatch: pytest.MonkeyPatch):
    def set_devices(*, cuda: bool = False, mps: bool = False, count: int = 1) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count if cuda else 0)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)

    return set_devices


@pytest.mark.parametrize(
    ("cuda", "mps", "expected"),
    [
        (True, True, ("cuda", torch.bfloat16)),
        (False, True, ("mps", torch.float32)),
        (False, False, ("cpu", torch.float32)),
    ],
)
def test_cuda_then_mps_then_cpu(has, cuda: bool, mps: bool, expected: tuple[str, object]) -> None:
    has(cuda=cuda, mps=mps)
    dev, dtype = pick_device(None)
    assert (dev.type, dtype) == expected


def test_mps_runs_a_float16_model_in_float16_and_others_in_float32(has) -> None:
    has(mps=True)
    assert pick_device(None, model_dtype="float16")[1] == torch.float16
    assert pick_device(None, model_dtype="bfloat16")[1] == torch.float32
    assert pick_device("mps", model_dtype="float32")[1] == torch.float32


def test_device_overrides_the_choice(has) -> None:
    has(cuda=True, mps=True, count=2)
    assert pick_device("cpu") == (torch.device("cpu"), torch.float32)
    assert pick_device("mps")[0].type == "mps"
    assert pick_device("cuda:1") == (torch.device("cuda:1"), torch.bfloat16)


def test_a_device_the_machine_lacks_is_one_clear_error(has) -> None:
    has(cuda=False, mps=False)
    with pytest.raises(ScoringError, match="no CUDA device"):
        pick_device("cuda")
    with pytest.raises(ScoringError, match="no Apple GPU"):
        pick_device("mps")
    has(cuda=True, count=1)
    with pytest.raises(ScoringError, match="there is no cuda:3"):
        pick_device("cuda:3")
