#!/usr/bin/env bash
# Installs the llama.cpp vocabulary files `pagoda model synth` uses for the shapes whose
# vocabulary `make model` does not fetch: ggml-vocab-qwen2.gguf (Qwen2.5, Qwen3),
# ggml-vocab-llama-bpe.gguf (Llama 3) and ggml-vocab-phi-3.gguf (Phi-4-mini, padded to its
# 200064 rows; `make vocab` installs it too), into $PAGODA_MODELS/ggml-vocab (default
# ~/.cache/pagoda/models/ggml-vocab). Source: the llama-cpp-python sdist on PyPI, which vendors
# llama.cpp's models/ directory (MIT), as scripts/fetch-ggml-vocab.sh.
# The Gemma 3 shapes copy the tokenizer of Gemma 3 270M itself, which `pagoda pull gemma3`
# installs at the top of the model cache; this script only says so when it is missing.
set -euo pipefail

version=0.3.36
dest="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/ggml-vocab"
files=(ggml-vocab-qwen2.gguf ggml-vocab-llama-bpe.gguf ggml-vocab-phi-3.gguf)

gemma3="$(dirname "$dest")/gemma-3-270m-q4_k_m.gguf"
[ -s "$gemma3" ] || echo "note: the gemma3 shapes read $gemma3: run \`pagoda pull gemma3\`" >&2

missing=0
for f in "${files[@]}"; do
  [ -s "$dest/$f" ] || missing=1
done
[ "$missing" = 0 ] && exit 0

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$tmp"
mkdir -p "$dest"
for f in "${files[@]}"; do
  tar -xzf "$tmp/llama_cpp_python-$version.tar.gz" -C "$tmp" "llama_cpp_python-$version/vendor/llama.cpp/models/$f"
  cp "$tmp/llama_cpp_python-$version/vendor/llama.cpp/models/$f" "$dest/$f"
  echo "installed $dest/$f ($(sha256sum "$dest/$f" | cut -c1-16)…)"
done
