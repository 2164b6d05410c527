#!/usr/bin/env bash
# Makes a model's llama.cpp reference files (testdata/reference/README.md) with
# scripts/make_reference.py, the way the committed ones were made:
#
#   scripts/make-references.sh MODEL.gguf OUTPREFIX [--long] [make_reference.py options ...]
#
#   OUTPREFIX.json          the n_batch 1 path: every token through llama.cpp's single-token
#                           decode; 48 greedy steps, top 5, for each of the 10 prompts
#   OUTPREFIX.teacher.json  llama.cpp's default path: the prompt in one batch of up to 512,
#                           then token by token; 64 steps, top 10
#   OUTPREFIX.long.json     with --long: one prompt of about 700 tokens (more than Gemma 3
#                           270M's 512-position sliding window), n_ctx 1024, the default path,
#                           32 steps, top 10
#
# All with --threads 1, weight repacking off, F16 KV cache, flash attention off. Other options
# go to every run, e.g. --chat-template FILE for a GGUF without a chat template:
#
#   scripts/make-references.sh /tmp/gemma3-270m.gguf testdata/reference/gemma3-270m-q4_k_m \
#       --long --chat-template tokenizer/templates/gemma3.jinja
#
# llama-cpp-python 0.3.36 runs from the venv $REF_VENV (default /tmp/refvenv), made here when
# missing: installed with CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF", so that it compiles
# no llama.cpp of its own (a 143 KB wheel, seconds), with numpy and jinja2. It loads the
# llama.cpp that scripts/build-llama-cpp.sh builds (the same pinned sources; built when missing,
# which takes long) through LLAMA_CPP_LIB_PATH. llama-cpp-python makes reference data only;
# pagoda never runs it.
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
model="$1"
prefix="$2"
shift 2
long=""
opts=()
for a in "$@"; do
  if [ "$a" = "--long" ]; then long=1; else opts+=("$a"); fi
done

here="$(cd "$(dirname "$0")" && pwd)"
venv="${REF_VENV:-/tmp/refvenv}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"

if ! "$venv/bin/python" -c "import importlib.metadata as m, numpy, jinja2; assert m.version('llama-cpp-python') == '$version'" 2>/dev/null; then
  echo "make-references: installing llama-cpp-python $version (no llama.cpp build of its own) into $venv" >&2
  python3 -m venv "$venv"
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" "$venv/bin/pip" install --quiet \
    "llama-cpp-python==$version" numpy jinja2 >&2
fi

LLAMA_CPP_LIB_PATH="$("$here/build-llama-cpp.sh")"
export LLAMA_CPP_LIB_PATH
[ -f "$LLAMA_CPP_LIB_PATH/libllama.so" ] || {
  echo "make-references: no libllama.so in $LLAMA_CPP_LIB_PATH" >&2
  exit 1
}

run() {
  local out="$1"
  shift
  local t0=$SECONDS
  "$venv/bin/python" "$here/make_reference.py" "$model" "$out" "$@" "${opts[@]}"
  "$venv/bin/python" - "$out" $((SECONDS - t0)) <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
steps = sum(len(c["steps"]) for c in d["cases"])
prompt = sum(len(c["prompt_tokens"]) for c in d["cases"])
print(f"{sys.argv[1]}: {len(d['cases'])} cases, {prompt} prompt tokens, {steps} steps, {sys.argv[2]} s")
EOF
}

run "$prefix.json" --threads 1
run "$prefix.teacher.json" --n-batch 512 --n-predict 64 --top 10 --threads 1
if [ -n "$long" ]; then
  run "$prefix.long.json" --long --n-ctx 1024 --n-batch 512 --n-predict 32 --top 10 --threads 1
fi
files=("$prefix.json" "$prefix.teacher.json")
[ -z "$long" ] || files+=("$prefix.long.json")
sha256sum "${files[@]}"
