#!/usr/bin/env bash
# Installs the llama.cpp vocabulary files `pagoda model synth` uses for the shapes whose
# vocabulary `make model` does not fetch: ggml-vocab-qwen2.gguf (Qwen2.5) and
# ggml-vocab-llama-bpe.gguf (Llama 3), into $PAGODA_MODELS/ggml-vocab (default
# ~/.cache/pagoda/models/ggml-vocab). Source: the llama-cpp-python sdist on PyPI, which vendors
# llama.cpp's models/ directory (MIT), as scripts/fetch-ggml-vocab.sh.
set -euo pipefail

version=0.3.36
dest="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/ggml-vocab"
files=(ggml-vocab-qwen2.gguf ggml-vocab-llama-bpe.gguf)

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
