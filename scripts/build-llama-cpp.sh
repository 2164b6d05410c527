#!/usr/bin/env bash
# Builds llama.cpp's llama-server and llama-bench from the sources vendored in the
# llama-cpp-python source distribution (the pinned version the reference data was made with),
# and prints the directory that holds the two binaries.
#
#   scripts/build-llama-cpp.sh            # prints e.g. ~/.cache/pagoda/llama.cpp-0.3.36/build/bin
#
# The build directory is cached in $PAGODA_CACHE/llama.cpp-<version> (default ~/.cache/pagoda):
# a second run finds the binaries and only prints the directory. CMake Release, native
# (GGML_NATIVE=ON: this CPU's instruction sets), shared libraries as llama.cpp builds by default
# (so that llama-cpp-python can load this build's libllama.so through LLAMA_CPP_LIB_PATH; see
# scripts/make_reference.py), no GPU backends, no web UI (the prebuilt UI would be fetched from
# the network at build time; the benchmark needs only the API), no curl; mtmd (the multimodal
# library llama-server links, unused by text) with its 46 model files compiled as a unity build,
# as llama.cpp compiles its own src/models, which halves the build's compile steps.
# cmake, a C++ compiler and make or ninja are installed with apt-get when missing and running as
# root (nothing that starts a service); otherwise a hint names them.
# The sources are downloaded, never committed.
set -euo pipefail

version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache="${PAGODA_CACHE:-$HOME/.cache/pagoda}"
dir="$cache/llama.cpp-$version"
bin="$dir/build/bin"

if [ -x "$bin/llama-server" ] && [ -x "$bin/llama-bench" ]; then
  echo "$bin"
  exit 0
fi

need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v make >/dev/null 2>&1 || command -v ninja >/dev/null 2>&1 || need="$need make"
python3 -m pip --version >/dev/null 2>&1 || need="$need python3-pip"
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "build-llama-cpp: installing$need" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >&2
  else
    echo "build-llama-cpp: missing build tools:$need (install them: sudo apt-get install$need)" >&2
    exit 1
  fi
fi

mkdir -p "$dir"
if [ ! -f "$dir/src/CMakeLists.txt" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "build-llama-cpp: downloading the llama-cpp-python $version source distribution (about 77 MB) ..." >&2
  python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$tmp" >&2
  tar -xzf "$tmp/llama_cpp_python-$version.tar.gz" -C "$tmp" "llama_cpp_python-$version/vendor/llama.cpp"
  rm -rf "$dir/src"
  mv "$tmp/llama_cpp_python-$version/vendor/llama.cpp" "$dir/src"
fi

# The unity build of mtmd's model files (mtmd's own sources clash when combined), through
# CMAKE_PROJECT_INCLUDE, so that llama.cpp's sources stay untouched.
cat >"$dir/mtmd-unity.cmake" <<'EOF'
if(NOT DEFINED PAGODA_MTMD_UNITY)
  set(PAGODA_MTMD_UNITY ON)
  function(pagoda_mtmd_unity)
    get_target_property(srcs mtmd SOURCES)
    get_target_property(dir mtmd SOURCE_DIR)
    foreach(f IN LISTS srcs)
      if(NOT f MATCHES "^models/")
        set_source_files_properties(${dir}/${f} TARGET_DIRECTORY mtmd PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
      endif()
    endforeach()
    set_target_properties(mtmd PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endfunction()
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL pagoda_mtmd_unity)
endif()
EOF
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
echo "build-llama-cpp: building llama-server and llama-bench in $dir/build (several minutes on 2 cores) ..." >&2
cmake -S "$dir/src" -B "$dir/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DCMAKE_PROJECT_INCLUDE="$dir/mtmd-unity.cmake" >&2
cmake --build "$dir/build" --config Release -j "$(nproc)" --target llama-server llama-bench llama >&2
echo "$bin"
