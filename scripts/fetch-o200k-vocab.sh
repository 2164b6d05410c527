#!/usr/bin/env bash
# Installs OpenAI's o200k_base BPE ranks (the byte-level vocabulary of o200k_harmony, gpt-oss's
# tokenizer, without its special tokens) into $PAGODA_MODELS/ggml-vocab/o200k_base.js (default
# ~/.cache/pagoda/models/ggml-vocab); `make vocab` runs it. The tokenizer tests derive a gpt-oss
# style vocabulary from it (tokens and merges as llama.cpp's converter derives them from
# tiktoken ranks) and compare pagoda's ids with llama.cpp's (tokenizer/testdata/o200k.vectors.json).
#
# Source: the js-tiktoken package (MIT) on the npm registry, fetched with `npm pack`; its
# dist/ranks/o200k_base.js holds the 199,998 ranks (2.3 MB). Both files are sha256-checked.
# Without npm the script says so and exits 0: the tests that need the file then skip, or fail
# under `make test`.
set -euo pipefail

version=1.0.21
tgz_sum=3b1f24b185565ca9a8d8f51466dfc4f99d67f1f05bc009258710ddb7a8d810fa
file_sum=a9e8a0c1f332c58f1a9cef2f8d7be59b31bb4b42531a3a0a64d9ad3b3d19033b
dest="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/ggml-vocab"
out="$dest/o200k_base.js"

if echo "$file_sum  $out" | sha256sum -c --status 2>/dev/null; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "fetch-o200k-vocab: npm is needed to fetch js-tiktoken@$version (install npm); the o200k tests will not run" >&2
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "js-tiktoken@$version" >/dev/null)
echo "$tgz_sum  $tmp/js-tiktoken-$version.tgz" | sha256sum -c --quiet
tar -xzf "$tmp/js-tiktoken-$version.tgz" -C "$tmp" package/dist/ranks/o200k_base.js
mkdir -p "$dest"
cp "$tmp/package/dist/ranks/o200k_base.js" "$out.tmp"
echo "$file_sum  $out.tmp" | sha256sum -c --quiet
mv "$out.tmp" "$out"
echo "fetch-o200k-vocab: installed $out" >&2
