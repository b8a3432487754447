# Set-up shared by the expert-parallel shell tests, sourced after `set -euo
# pipefail`: a scratch directory, removed on exit, holding this folder's
# sources tokenized as d_train.bin / d_val.bin. Sets exe (the parallm
# binary, $1 of the test), work, mpi (the mpirun command line) and
# tiny_moe_toml (the tiny LLaMA MoE most of these tests train); leaves the
# shell in work.
exe=$1
ep_tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tiny_moe_toml=$ep_tests_dir/tiny_moe_run.toml
mpi="mpirun --oversubscribe --bind-to none --mca btl self,vader"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for f in "$ep_tests_dir"/*.cpp; do cat "$f"; done > corpus.txt
"$exe" tokenize corpus.txt --out d > /dev/null
