#!/usr/bin/env bash
# Installs every package parallm and its tests need on a fresh Debian 12
# machine: Debian packages with apt (skipped when all are present), then the
# Python packages the tests import that Debian lacks, with pip into Debian's
# /usr/bin/python3. Fails, naming the package, when any of them is still
# missing afterwards: a test must never skip for want of a dependency.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin
  libopenblas-openmp-dev libdnnl-dev libomp-dev
  nlohmann-json3-dev libcli11-dev libtomlplusplus-dev libfmt-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy python3-pip
  python3-regex python3-jinja2 python3-filelock python3-tqdm python3-packaging python3-fsspec
  python3-yaml python3-requests python3-psutil
  python3-protobuf python3-absl
  python3-httpx python3-pydantic python3-anyio python3-sniffio python3-distro
  python3-jsonschema
  libonig-dev libpcre2-dev libcpp-httplib-dev
  fortunes
  iproute2 util-linux
)
PY=/usr/bin/python3
# PyPI packages, pinned; --no-deps so pip cannot replace Debian's torch or
# numpy with wheels of other versions (safetensors needs neither to import;
# safetensors.numpy uses Debian's numpy). transformers 4.44 is the judge of
# Hugging Face compatibility (generation, chat templates) and runs on Debian's
# torch; its other dependencies come from Debian above. The official openai
# client (the serve conformance test) runs on Debian's httpx 0.23, pydantic
# 1.10 and anyio 3.6; it needs a newer typing_extensions than Debian's 4.4
# (pure Python, backward compatible: torch and pydantic import it too) and
# jiter (its JSON parser, a self-contained wheel). tensorboard 2.14 (its event
# reader judges `--tensorboard` files) needs only Debian's protobuf 3.21 and
# absl for that reader, so its own pins (grpcio, a newer protobuf) stay out.
# peft 0.12 (the LoRA adapter reference, docs/lora.md) and its accelerate
# 0.33 run on Debian's torch 1.13; with their dependencies pip would pull a
# multi-GB torch 2.x, so they too come without (psutil, pyyaml, tqdm,
# packaging are Debian's). gguf 0.19 (llama.cpp's own reader and writer:
# the reference for GGUF files and the dequantisation of every block type,
# docs/quantized.md) needs numpy and pyyaml, both Debian's. ml_dtypes 0.5.4
# (the reference for the FP8 casts, docs/fp8.md) needs numpy only (its wheel
# runs on Debian's numpy 1.24).
PIP_PKGS=(safetensors==0.8.0 tokenizers==0.19.1 huggingface_hub==0.24.7 transformers==4.44.2
  typing_extensions==4.12.2 jiter==0.5.0 openai==1.54.4 tensorboard==2.14.0 accelerate==0.33.0
  peft==0.12.0 gguf==0.19.0 ml_dtypes==0.5.4)
# Every Python module a test imports -> the package that provides it
# (tests/reference/*.py, tests/checkpoint/read_export.py,
# tests/infer/serve/serve_openai_check.py).
PY_MODULES=(numpy:python3-numpy torch:python3-torch safetensors:safetensors==0.8.0
  tokenizers:tokenizers==0.19.1 transformers:transformers==4.44.2 jinja2:python3-jinja2
  openai:openai==1.54.4 tensorboard.backend.event_processing.event_accumulator:tensorboard==2.14.0
  accelerate:accelerate==0.33.0 peft:peft==0.12.0 gguf:gguf==0.19.0
  jsonschema:python3-jsonschema ml_dtypes:ml_dtypes==0.5.4)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[install-deps] installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for spec in "${PIP_PKGS[@]}"; do
  name=${spec%%==*}
  want=${spec#*==}
  have=$("$PY" -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)
  [ "$have" = "$want" ] && continue
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "[install-deps] pip installing $spec (have: ${have:-none})"
  $SUDO "$PY" -m pip install --quiet --break-system-packages --no-deps "$spec" ||
    { echo "[install-deps] ERROR: pip could not install $spec" >&2; exit 1; }
done

# bitsandbytes (the NF4 reference, tests/reference/nf4_compare.py) in a
# directory of its own, off Python's path: 0.50 imports on Debian's torch 1.13
# only through tests/reference/bnb_compat.py, and transformers or peft would
# import any bitsandbytes they find on the path (and fail). The test puts
# this directory on sys.path itself. --no-deps: it needs only torch and numpy.
BNB_SPEC=bitsandbytes==0.50.2
BNB_DIR=/opt/parallm-py/bitsandbytes-0.50.2
if [ ! -f "$BNB_DIR/bitsandbytes/__init__.py" ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "[install-deps] pip installing $BNB_SPEC into $BNB_DIR"
  $SUDO "$PY" -m pip install --quiet --no-deps --target "$BNB_DIR" "$BNB_SPEC" ||
    { echo "[install-deps] ERROR: pip could not install $BNB_SPEC" >&2; exit 1; }
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHONPATH="$BNB_DIR:$HERE/../tests/reference" "$PY" -c \
  "import bnb_compat, bitsandbytes, torch; assert bitsandbytes.__version__ == '0.50.2'; assert torch.__file__.startswith('/usr/lib/python3/dist-packages/torch/')" ||
  { echo "[install-deps] ERROR: bitsandbytes in $BNB_DIR does not import on Debian's torch" >&2; exit 1; }

# One interpreter start (importing torch takes seconds): each module a test
# imports must load, and torch and numpy must be Debian's, since a pip wheel
# shadowing them would change what the reference tests compare against.
"$PY" - "${PY_MODULES[@]}" <<'PYEOF' || exit 1
import importlib, sys
debian = {"torch": "/usr/lib/python3/dist-packages/torch/",
          "numpy": "/usr/lib/python3/dist-packages/numpy/"}
bad = []
for entry in sys.argv[1:]:
    mod, pkg = entry.split(":", 1)
    try:
        m = importlib.import_module(mod)
    except Exception as e:
        bad.append(f"cannot import '{mod}' (package {pkg}): {e}")
        continue
    if mod in debian and not m.__file__.startswith(debian[mod]):
        bad.append(f"'{mod}' is not Debian's {pkg}: {m.__file__}")
for b in bad:
    print(f"[install-deps] ERROR: {sys.executable}: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF
