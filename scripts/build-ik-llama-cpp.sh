#!/usr/bin/env bash
# Builds ik_llama.cpp's llama-bench (CPU only) from sources already on this machine, and prints
# the directory that holds the binary.
#
#   scripts/build-ik-llama-cpp.sh         # prints e.g. ~/.cache/pagoda/ik_llama.cpp-build/bin
#
# ik_llama.cpp (github.com/ikawrakow/ik_llama.cpp) is a llama.cpp fork with its own CPU kernels
# (run-time weight repacking, -rtr 1) that scripts/bench-peers.sh measures beside pagoda and
# llama.cpp when it is built. This script never downloads: the sources come from
#   - $PAGODA_CACHE/ik_llama.cpp-src (default ~/.cache/pagoda), if it holds them already, or
#   - a git directory of the repository, $IK_LLAMA_CPP_GIT (a clone's .git, or a bare mirror;
#     default /work/.mirror/ikawrakow+ik_llama.cpp/repo when that exists), whose HEAD is
#     unpacked into the source directory with `git archive HEAD | tar -x`.
# Without either it says how to get them and exits 1 (bench-peers.sh then leaves ik_llama.cpp
# out). The build is cached in $PAGODA_CACHE/ik_llama.cpp-build: a second run finds the binary
# and only prints the directory. CMake Release, native (GGML_NATIVE=ON), no GPU backends, no
# curl, only the llama-bench target, JOBS parallel compile jobs (default 2; ik_llama.cpp's
# kernels take a long while to compile on 2 cores).
set -euo pipefail

cache="${PAGODA_CACHE:-$HOME/.cache/pagoda}"
src="$cache/ik_llama.cpp-src"
build="$cache/ik_llama.cpp-build"
bin="$build/bin"
jobs="${JOBS:-2}"

if [ -x "$bin/llama-bench" ]; then
  echo "$bin"
  exit 0
fi

# One build at a time: a second run while one builds says so and fails (bench-peers.sh then
# leaves ik_llama.cpp out) rather than building into the same directory.
mkdir -p "$cache"
exec 9>"$cache/ik_llama.cpp.lock"
if ! flock -n 9; then
  echo "build-ik-llama-cpp: another build is running (the lock $cache/ik_llama.cpp.lock is held); run this again when it is done" >&2
  exit 1
fi

if [ ! -f "$src/CMakeLists.txt" ]; then
  gitdir="${IK_LLAMA_CPP_GIT:-}"
  if [ -z "$gitdir" ] && [ -d /work/.mirror/ikawrakow+ik_llama.cpp/repo ]; then
    gitdir=/work/.mirror/ikawrakow+ik_llama.cpp/repo
  fi
  if [ -z "$gitdir" ] || ! git --git-dir="$gitdir" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    cat >&2 <<EOF
build-ik-llama-cpp: no ik_llama.cpp sources. Get them with
  git clone https://github.com/ikawrakow/ik_llama.cpp
and run this script with IK_LLAMA_CPP_GIT=<the clone>/.git, or unpack them into
  $src
EOF
    exit 1
  fi
  echo "build-ik-llama-cpp: unpacking ik_llama.cpp $(git --git-dir="$gitdir" rev-parse --short HEAD) from $gitdir into $src" >&2
  rm -rf "$src.tmp"
  mkdir -p "$src.tmp"
  # A mirror may leave out its largest blobs (the server's web UI, vocabulary test models):
  # llama-bench needs none of them, so they are left out of the archive.
  skip=()
  while read -r path; do
    skip+=(":(exclude)$path")
    echo "build-ik-llama-cpp: left out $path (not in the git directory)" >&2
  done < <(git --git-dir="$gitdir" ls-tree -r HEAD | awk -F '\t' '{split($1, a, " "); if (a[2] == "blob") print a[3] "\t" $2}' |
    while IFS=$'\t' read -r hash path; do
      git --git-dir="$gitdir" cat-file -e "$hash" 2>/dev/null || echo "$path"
    done)
  git --git-dir="$gitdir" archive HEAD -- . "${skip[@]}" | tar -x -C "$src.tmp"
  git --git-dir="$gitdir" rev-parse HEAD >"$src.tmp/PAGODA_COMMIT"
  rm -rf "$src"
  mv "$src.tmp" "$src"
fi

need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v make >/dev/null 2>&1 || command -v ninja >/dev/null 2>&1 || need="$need make"
if [ -n "$need" ]; then
  echo "build-ik-llama-cpp: missing build tools:$need (install them: sudo apt-get install$need)" >&2
  exit 1
fi

gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
echo "build-ik-llama-cpp: building llama-bench in $build (a long while on 2 cores) ..." >&2
cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=ON \
  -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF >&2
cmake --build "$build" --config Release -j "$jobs" --target llama-bench >&2
echo "$bin"
