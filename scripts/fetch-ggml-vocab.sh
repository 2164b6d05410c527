#!/usr/bin/env bash
# Installs pristine copies of llama.cpp's vocabulary-only test GGUFs (and the qwen2 and llama-bpe
# vocabularies the synthetic Qwen3 and Llama 3 test models copy) into the model cache
# ($PAGODA_MODELS/ggml-vocab, default ~/.cache/pagoda/models/ggml-vocab); `make vocab` runs it,
# and `make test` through it. The tokenizer and gguf tests read them (internal/testmodel.Vocab);
# their text test vectors (.inp/.out) are committed in testdata/ggml-vocab.
#
# Why fetched: the copies once handed to the project were damaged in transit — every byte
# sequence that is not valid UTF-8 was replaced by U+FFFD (EF BF BD), which breaks the binary
# GGUF structure (array lengths, float scores); the gguf tests check that such a copy is
# rejected. These binaries (7 MB) are extracted and checked instead of committed.
#
# Source: the llama-cpp-python sdist vendors llama.cpp, including models/ggml-vocab-*.gguf
# (MIT). The files are checked against the sha256 sums below.
set -euo pipefail

version=0.3.36
dest="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/ggml-vocab"
declare -A sums=(
  [ggml-vocab-llama-spm.gguf]=16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69
  [ggml-vocab-gpt-2.gguf]=cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac
  [ggml-vocab-phi-3.gguf]=967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326
  [ggml-vocab-deepseek-llm.gguf]=867f77537b54565f0d81d508c04edc41aa1d4ffc1a92745f225b4c1b02755f76
  [ggml-vocab-bert-bge.gguf]=fbcbe22278fb302694d5f4a41bfe48c5f90e8e3554eab1c0435387dff654a854
  [ggml-vocab-qwen2.gguf]=44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c
  [ggml-vocab-llama-bpe.gguf]=97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e
)

have_all=1
for f in "${!sums[@]}"; do
  if ! echo "${sums[$f]}  $dest/$f" | sha256sum -c --status 2>/dev/null; then
    have_all=0
  fi
done
if [ "$have_all" = 1 ]; then
  exit 0
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "fetch-ggml-vocab: python3 with pip is needed to download llama-cpp-python==$version (install python3-pip)" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-ggml-vocab: downloading the llama-cpp-python $version source distribution (about 77 MB) for llama.cpp's vocabulary test files ..." >&2
python3 -m pip download --progress-bar on --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$tmp"
mkdir -p "$dest"
for f in "${!sums[@]}"; do
  tar -xzf "$tmp/llama_cpp_python-$version.tar.gz" -C "$tmp" \
    "llama_cpp_python-$version/vendor/llama.cpp/models/$f"
  cp "$tmp/llama_cpp_python-$version/vendor/llama.cpp/models/$f" "$dest/$f.tmp"
  echo "${sums[$f]}  $dest/$f.tmp" | sha256sum -c --quiet
  mv "$dest/$f.tmp" "$dest/$f"
done
echo "fetch-ggml-vocab: installed $(du -sh "$dest" | cut -f1) of ggml-vocab test files into $dest" >&2
