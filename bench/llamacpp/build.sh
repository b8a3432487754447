#!/usr/bin/env bash
# bench/llamacpp/build.sh [DIR]: builds llama.cpp, the peer of issue 44's
# quantized CPU bench, from source at bench time. llama.cpp's code never enters
# the project: the pinned PyPI sdist of llama-cpp-python (which vendors the
# whole llama.cpp tree, convert_hf_to_gguf.py and gguf-py included) is fetched
# into DIR (default $LLAMACPP_DIR, else build/llamacpp) and built there.
# Idempotent: each step is skipped when its output exists. Prints the bin dir.
# Tools: llama-bench, llama-quantize, llama-perplexity, llama-server.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${1:-${LLAMACPP_DIR:-$ROOT/build/llamacpp}}
VERSION=0.3.36                     # llama-cpp-python release; pins llama.cpp
SDIST=llama_cpp_python-$VERSION.tar.gz
SRC=$DIR/src                       # vendor/llama.cpp lands here
BLD=$DIR/build
TOOLS=(llama-bench llama-quantize llama-perplexity llama-server)
mkdir -p "$DIR"

# 1. The sdist, through pip (the registry's ordinary client), no deps, source only.
if [[ ! -f $DIR/$SDIST ]]; then
    python3 -m pip download --no-deps --no-binary :all: \
        "llama-cpp-python==$VERSION" -d "$DIR" >&2
fi

# 2. Only vendor/llama.cpp is needed; strip the sdist's two leading dirs.
if [[ ! -f $SRC/CMakeLists.txt ]]; then
    rm -rf "$SRC.tmp" && mkdir -p "$SRC.tmp"
    tar -xzf "$DIR/$SDIST" -C "$SRC.tmp" --strip-components=3 \
        "llama_cpp_python-$VERSION/vendor/llama.cpp"
    mv "$SRC.tmp" "$SRC"
fi

# 3. Configure: native CPU kernels (AVX-512 here), static, no network at
# build or run time (no OpenSSL, no prebuilt web UI from Hugging Face),
# no tests or examples.
if [[ ! -f $BLD/build.ninja ]]; then
    cmake -S "$SRC" -B "$BLD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
        -DGGML_CCACHE=OFF >&2
fi

# 4. Only the four tools (greedy ids come from llama-server's /completion).
missing=()
for t in "${TOOLS[@]}"; do [[ -x $BLD/bin/$t ]] || missing+=("$t"); done
if (( ${#missing[@]} )); then
    nice -n 10 cmake --build "$BLD" -j "${LLAMACPP_JOBS:-2}" \
        --target "${missing[@]}" >&2
fi
echo "$BLD/bin"
