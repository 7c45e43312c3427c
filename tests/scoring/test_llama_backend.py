"""The llama.cpp backend on the embedded model's own GGUF file, against the transformers path.

Both paths read the same Q4_1 weights: transformers de-quantises them to float32 and
computes in float32; llama.cpp keeps them quantized and quantizes each matmul's
activations to 8 bits (Q8_1). On this 135M model the two next-token distributions differ
by a KL divergence of about 0.005 nats, and one option's log-probability by up to about
0.4 nats (0.13 at the median) on the sample codebooks; the model's pick agreed on all 156
pairs measured. The tests hold the surprisals to :data:`TOL` nats (largest difference)
and :data:`TOL_MEDIAN` (median), and the pick to :data:`PICK_AGREEMENT` of the pairs.

Within llama.cpp, prefix reuse and multi-token reads change batch shapes only: results
agree with a whole-prompt evaluation to :data:`TOL_SELF` nats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codebooks import load_codebook
from scoring import Pair, ScoringEngine, ScoringError, load_backend
from scoring.backends.gguf_file import GGUFError

pytestmark = pytest.mark.model

pytest.importorskip(
    "llama_cpp", reason="llama-cpp-python is not installed (pip install 'codecurve[llama]')"
)

from scoring.backends.llama.backend import LlamaCppBackend  # noqa: E402 - after the skip

SAMPLES = Path(__file__).parents[2] / "codebooks" / "samples"
TOL = 0.6
TOL_MEDIAN = 0.25
PICK_AGREEMENT = 0.95
TOL_SELF = 2e-3
RESPONSES_PER_CODEBOOK = 6

LIKERT = [(str(i), f" {i}") for i in range(1, 6)]


@pytest.fixture(scope="module")
def llama() -> LlamaCppBackend:
    backend = load_backend(None, backend="llama.cpp", threads=1)
    assert isinstance(backend, LlamaCppBackend)
    return backend


def fresh(llama: LlamaCppBackend, **options: Any) -> LlamaCppBackend:
    """The same file in a new backend: an empty cache and zeroed counters."""
    options = {"chat": llama.is_chat, "threads": 1, **options}
    return LlamaCppBackend(llama.info, name="t", revision="t", **options)


def sample_pairs() -> list[tuple[Any, list[Pair]]]:
    from study.intake.responses import read_responses

    out = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        codebook = load_codebook(path)
        csv = SAMPLES / (path.stem.removesuffix("_scaled") + ".csv")
        table = list(read_responses(csv))[:RESPONSES_PER_CODEBOOK]
        out.append((codebook, [Pair(r.id, r.text, c) for r in table for c in codebook.codable]))
    return out


def test_identity_names_the_file_quantization_and_backend_version(
    llama: LlamaCppBackend,
) -> None:
    import llama_cpp

    ident = llama.identity
    assert ident.name == "embedded:SmolLM2-135M-Instruct"
    assert (ident.dtype, ident.device) == ("Q4_1", "cpu")
    assert ident.backend == f"llama.cpp {llama_cpp.__version__}"
    assert len(ident.revision) == 16
    assert "llama.cpp" in ident.describe()


def test_rendered_prompt_and_tokens_equal_the_transformers_path(
    llama: LlamaCppBackend, embedded_backend: Any
) -> None:
    assert llama.is_chat
    assert embedded_backend.is_chat
    assert llama.identity.key() != embedded_backend.identity.key()
    assert llama.identity.revision == embedded_backend.identity.revision
    messages = [
        {"role": "system", "content": "You code survey responses."},
        {"role": "user", "content": "Rate it.\n\nResponse:\nThe pay is too low — “really”."},
    ]
    prompt = llama.render_chat(messages)
    assert prompt == embedded_backend.render_chat(messages)
    assert prompt.endswith("<|im_start|>assistant\n")
    assert llama.encode(prompt) == embedded_backend.encode(prompt)
    # BOS as the GGUF file says: SmolLM2 adds none, in both paths.
    assert llama.encode("Hello")[0] == embedded_backend.encode("Hello")[0] != 1


def test_surprisals_agree_with_the_transformers_path_on_the_samples(
    llama: LlamaCppBackend, embedded_backend: Any
) -> None:
    diffs: list[float] = []
    agree = total = 0
    for codebook, pairs in sample_pairs():
        ours = ScoringEngine(llama, codebook, context="definition").score(pairs)
        ref = ScoringEngine(embedded_backend, codebook, context="definition").score(pairs)
        for a, b in zip(ours, ref, strict=True):
            assert a.prompt == b.prompt
            assert a.token_ids == b.token_ids
            # Every curve sums to its reported on-scale mass.
            assert np.exp(-a.curve.surprisal).sum() == pytest.approx(a.curve.on_scale_mass)
            assert a.curve.probs.sum() == pytest.approx(1.0)
            diffs.append(float(np.abs(a.curve.surprisal - b.curve.surprisal).max()))
            agree += a.curve.mode == b.curve.mode
            total += 1
    assert total >= 60
    assert max(diffs) < TOL, max(diffs)
    assert float(np.median(diffs)) < TOL_MEDIAN
    assert agree / total >= PICK_AGREEMENT, f"{agree} of {total} picks agree"


def test_multi_token_variants_are_teacher_forced_like_the_transformers_path(
    llama: LlamaCppBackend, plain_backend: Any
) -> None:
    prompt = "The capital of France is"
    options = [(" Paris", " Par is"), (" the city of Lyon",), (" Rome",)]
    plain = fresh(llama, chat=False)
    ours = plain.option_logprobs([prompt], options)[0]
    ref = plain_backend.option_logprobs([prompt], options)[0]
    assert any(len(ids) > 2 for opt in ours.token_ids for ids in opt)
    assert ours.token_ids == ref.token_ids
    np.testing.assert_allclose(ours.logprobs, ref.logprobs, atol=TOL)
    assert int(np.argmax(ours.logprobs)) == 0
    # The sum over the tokens of " the city of Lyon" is far below a single token's.
    assert ours.logprobs[1] < ours.logprobs[2] - 1.0


def test_prefix_reuse_evaluates_the_shared_prefix_once(llama: LlamaCppBackend) -> None:
    from scoring.backends.kv_cache import common_prefix_len

    backend = fresh(llama, chat=False)
    head = "Rate how well the code 'Pay' applies to this response, 1 to 5.\n\nResponse: "
    texts = ["Apples are cheap.", "Bananas cost more now.", "Cherries, never.", "Dates!"]
    prompts = [f"{head}{t}\nAnswer:" for t in texts]
    ids = [backend.encode(p) for p in prompts]
    shared = common_prefix_len(ids)
    assert shared > 15
    continuation = len(backend.encode(" 1")) - len(backend.encode("1"))  # the space, fed
    scored = backend.option_logprobs(prompts, LIKERT)
    tokens = sum(len(i) for i in ids)
    stats = backend.stats
    assert stats["reused_tokens"] == shared * (len(prompts) - 1)
    assert stats["evaluated_tokens"] == tokens - shared * (len(prompts) - 1) + continuation * len(
        prompts
    )
    # The numbers are those of evaluating every prompt whole.
    whole = fresh(llama, chat=False, prefix_reuse=False)
    alone = whole.option_logprobs(prompts, LIKERT)
    assert whole.stats["reused_tokens"] == 0
    for a, b in zip(scored, alone, strict=True):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=TOL_SELF)


def test_the_codes_of_a_study_cost_their_suffixes(llama: LlamaCppBackend) -> None:
    codebook, pairs = sample_pairs()[-1]  # work_survey: 7 codes
    backend = fresh(llama)
    scores = ScoringEngine(backend, codebook, context="definition").score(pairs)
    read = sum(backend.count_tokens(s.prompt) for s in scores)
    # Each pair evaluates its response, the cue and a continuation, not the instructions.
    assert backend.stats["evaluated_tokens"] < 0.35 * read
    assert backend.stats["evaluated_tokens"] + backend.stats["reused_tokens"] >= read


def test_over_long_prompts_are_cut_from_the_middle_and_flagged(llama: LlamaCppBackend) -> None:
    backend = fresh(llama, chat=False, max_context=64)
    assert backend.max_context == 64
    long = "Start. " + "filler words here " * 60 + "End.\nAnswer:"
    short = "Rate it.\nAnswer:"
    results = backend.option_logprobs([long, short], LIKERT)
    assert results[0].truncated
    assert not results[1].truncated
    assert results[0].prompt_tokens == 64 - 2  # the budget leaves room for " 1"
    assert np.isfinite(results[0].logprobs).all()


def test_an_unknown_architecture_is_one_clear_error(tmp_path: Path) -> None:
    from tests.scoring.test_gguf_file import write_gguf

    path = write_gguf(tmp_path / "odd.gguf", "notanarch")
    with pytest.raises(GGUFError, match=r"cannot load .*architecture 'notanarch'"):
        load_backend(str(path))


def test_a_cpu_build_refuses_a_gpu_device(llama: LlamaCppBackend) -> None:
    from scoring.backends.llama.backend import gpu_build

    if gpu_build():
        pytest.skip("this llama-cpp-python is a GPU build")
    with pytest.raises(ScoringError, match="CPU build"):
        load_backend(None, backend="llama.cpp", device="cuda")


def test_a_study_records_the_backend_and_two_backends_are_two_configurations(
    tmp_path: Path,
) -> None:
    from scoring.weights import embedded_gguf_path
    from study import Study
    from tui.cli import main

    responses = tmp_path / "r.csv"
    responses.write_text("id,text\na,The pay is low.\nb,Great colleagues.\n", encoding="utf-8")
    codebook = tmp_path / "c.yaml"
    codebook.write_text("name: T\nscale: binary\ncodes:\n  - name: Pay\n", encoding="utf-8")
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    gguf = str(embedded_gguf_path())
    for backend in ("llama.cpp", "transformers"):
        args = ["score", str(path), "--model", gguf, "--backend", backend, "--threads", "1"]
        assert main(args) == 0
    with Study.open(path, read_only=True) as study:
        rows = study.scores.configs()
        assert [r.model.backend.split()[0] for r in rows] == ["llama.cpp", "transformers"]
        assert [r.model.dtype for r in rows] == ["Q4_1", "float32"]
        assert rows[0].model.revision == rows[1].model.revision
        assert len({r.key for r in rows}) == 2
        assert all(study.scores.scored_count(r.id) == 2 for r in rows)


def test_a_llama_cpp_score_job_never_imports_torch_or_transformers(tmp_path: Path) -> None:
    """Start-up is the llama.cpp path's gain: the whole CLI job runs without torch."""
    import subprocess
    import sys

    from scoring.weights import embedded_gguf_path

    responses = tmp_path / "r.csv"
    responses.write_text("id,text\na,The pay is low.\n", encoding="utf-8")
    codebook = tmp_path / "c.yaml"
    codebook.write_text("name: T\nscale: binary\ncodes:\n  - name: Pay\n", encoding="utf-8")
    args = [
        "score",
        *("--responses", str(responses), "--codebook", str(codebook)),
        *("--model", str(embedded_gguf_path()), "--backend", "llama.cpp", "--threads", "1"),
        *("-o", str(tmp_path / "out.csv")),
    ]
    script = (
        "import sys\nfrom tui.cli import main\n"
        f"rc = main({args!r})\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'safetensors') if m in sys.modules)\n"
        "print(rc, heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=600
    )
    assert done.stdout.split("\n")[-2] == "0 []", done.stdout + done.stderr[-2000:]
    assert (tmp_path / "out.csv").read_text(encoding="utf-8").count("\n") == 2


def test_a_build_whose_amx_kernels_crash_loads_its_weights_in_plain_cpu_buffers(
    llama: LlamaCppBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the build has AMX kernels and they failed their check (scoring.backends.llama.amx),
    the weights are not repacked for them, and the binding's defaults are left as they
    were; where they passed it, or the build has none, they are."""
    import llama_cpp

    from scoring.backends.llama import backend as llama_backend

    low = llama_cpp.llama_cpp
    defaults = low.llama_model_default_params
    info = llama_cpp.llama_print_system_info()
    assert llama_backend.amx_build() == (b"AMX_INT8 = 1" in info)
    # This machine's binding is built by ``make llama``: its kernels work if it has them.
    assert llama.repacked
    seen: list[bool] = []
    real = llama_cpp.Llama

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(bool(low.llama_model_default_params().use_extra_bufts))
        if len(seen) == 2:  # a repacked load: would crash with the failing kernels
            raise RuntimeError("not loaded")
        return real(*args, **kwargs)

    monkeypatch.setattr(llama_cpp, "Llama", spy)
    monkeypatch.setattr(llama_backend, "amx_build", lambda: True)
    monkeypatch.setattr(llama_backend, "repacking_works", lambda binding, model: False)
    backend = fresh(llama)
    assert not backend.repacked
    assert backend.option_logprobs(["Say yes:"], [(" yes",), (" no",)])[0].logprobs.size == 2
    backend.close()
    monkeypatch.setattr(llama_backend, "repacking_works", lambda binding, model: True)
    with pytest.raises(GGUFError, match="not loaded"):
        fresh(llama)
    assert seen == [False, True]
    assert low.llama_model_default_params is defaults
    assert defaults().use_extra_bufts
