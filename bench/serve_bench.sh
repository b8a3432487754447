#!/usr/bin/env bash
# The `parallm serve` load benchmark (issue 14): continuous against static
# batching under Poisson arrivals, and prefix reuse of a ~1k-token system
# prompt, on a small random GPT-2 (built once into WORK/model by
# transformers). Builds nothing: give it a built parallm binary. Prints the
# tables (markdown) and writes WORK/results.json and the SVG plot.
# Usage: bench/serve_bench.sh PARALLM_BIN [WORK_DIR] [SVG_OUT] [-- extra serve_bench.py flags]
#   defaults: WORK_DIR /tmp/parallm_serve_bench, SVG_OUT WORK_DIR/serving_bench.svg
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
parallm="$(realpath "$1")"
[ -x "$parallm" ] || { echo "not an executable: $1" >&2; exit 1; }
work="${2:-/tmp/parallm_serve_bench}"
svg="${3:-$work/serving_bench.svg}"
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
mkdir -p "$work"
# Python with torch/transformers/tokenizers (the model builder needs them).
py=/usr/bin/python3
"$py" -c "import torch, transformers, tokenizers" 2>/dev/null || py=python3
exec "$py" "$here/serve_bench.py" --parallm "$parallm" --work "$work" --svg "$svg" "$@"
