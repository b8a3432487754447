#!/usr/bin/env bash
# Measured pipeline pictures: a real 4-stage run (pp 4, 8 micro-batches) of
# configs/llama-pipeline.toml for each schedule, the last step drawn to
# docs/pipeline/measured-<schedule>-pp4-m8.svg and each step's bubble
# (wall clock and replayed, see docs/pipeline.md) in runs/pipeline/.
# On a machine with fewer than 4 cores the stages share cores: the pictures
# then show that too (label any numbers taken that way).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
if [ ! -f runs/data/fortunes_train.bin ]; then
  mapfile -t texts < <(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | sort)
  ./build/parallm tokenize "${texts[@]}" --out runs/data/fortunes --val-fraction 0.02
fi
mkdir -p runs/pipeline docs/pipeline
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
for s in gpipe 1f1b interleaved zb; do
  v=1; [ "$s" = interleaved ] && v=2
  suffix=""; [ "$v" = 2 ] && suffix="-v2"
  mpirun --oversubscribe --bind-to none --mca btl self,vader -np 4 ./build/parallm train \
    --config configs/llama-pipeline.toml --schedule "$s" --virtual-stages "$v" --steps 6 \
    --threads 1 --peak-tflops 1 --log-interval 1 \
    --metrics "runs/pipeline/$s.jsonl" --trace "runs/pipeline/$s.json" \
    --timeline "docs/pipeline/measured-$s-pp4-m8$suffix.svg"
done
