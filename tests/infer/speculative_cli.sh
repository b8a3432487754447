#!/usr/bin/env bash
# Speculative decoding flags end to end: `parallm generate` on a tiny trained
# model greedy, plain and with --draft-model (the model itself: every draft
# accepted), --ngram-draft and --num-speculative-tokens (its alias without a
# draft model), all giving the plain tokens; contradicting flags refused
# with their names. With a launcher (mpirun -np 2), --draft-model under
# --tp 2 and --pp 2 too (the draft runs on the sampling rank alone).
# The numerics: tests/infer/speculative_*_test.cpp.
# Usage: speculative_cli.sh PATH_TO_PARALLM [LAUNCHER...]
set -u
bin="$1"
shift
launcher=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, expect_error, tiny_corpus
. "$(dirname "$0")/../common/cli_checks.sh"

tiny_corpus "$bin" "$work" 300
"$bin" train --model gpt2-tiny --data "$work/data_train.bin" --steps 4 --micro-batch-size 2 \
  --global-batch-size 2 --seq-len 32 --lr 3e-3 --threads 1 --save-hf "$work/hf" >/dev/null 2>&1 ||
  fail "train the tiny model"

gen=("$bin" generate --model "$work/hf" --prompt "the cat the cat the cat" --max-new-tokens 24
     --temperature 0 --json --threads 1)
tokens() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["tokens"])' "$1"; }
"${gen[@]}" > "$work/plain" 2> "$work/plain.log" || { cat "$work/plain.log"; fail "plain generate"; }
check() {  # name, flags...
  local name="$1"
  shift
  "${gen[@]}" "$@" > "$work/$name" 2> "$work/$name.log" ||
    { cat "$work/$name.log"; fail "generate $*"; }
  [ "$(tokens "$work/$name")" = "$(tokens "$work/plain")" ] ||
    fail "generate $* gave $(tokens "$work/$name"), plain $(tokens "$work/plain")"
}
check self --draft-model "$work/hf" --num-speculative-tokens 3
grep -qE 'draft-model drafts ([1-9][0-9]*) tokens, \1 accepted' "$work/self.log" ||
  { cat "$work/self.log"; fail "the model drafting for itself did not have every draft accepted"; }
check default_k --draft-model "$work/hf"
check ngram --ngram-draft 3
check alias --num-speculative-tokens 3
grep -qF 'ngram drafts' "$work/alias.log" ||
  { cat "$work/alias.log"; fail "--num-speculative-tokens without --draft-model is not prompt lookup"; }
echo "generate: plain, --draft-model (itself), --ngram-draft, --num-speculative-tokens: equal tokens"

expect_error "are two kinds of draft; give one" \
  "${gen[@]}" --draft-model "$work/hf" --ngram-draft 2
expect_error "--ngram-draft (2) and --num-speculative-tokens (3) disagree" \
  "${gen[@]}" --ngram-draft 2 --num-speculative-tokens 3
echo "contradicting flags refused"

if [ ${#launcher[@]} -gt 0 ]; then
  for grid in "--tp 2" "--pp 2"; do
    # shellcheck disable=SC2086
    "${launcher[@]}" "${gen[@]}" $grid --draft-model "$work/hf" > "$work/dist" 2> "$work/dist.log" ||
      { cat "$work/dist.log"; fail "generate $grid --draft-model"; }
    [ "$(tokens "$work/dist")" = "$(tokens "$work/plain")" ] ||
      fail "generate $grid --draft-model gave $(tokens "$work/dist"), plain $(tokens "$work/plain")"
    grep -qE 'draft-model drafts ([1-9][0-9]*) tokens, \1 accepted' "$work/dist.log" ||
      { cat "$work/dist.log"; fail "$grid: the model drafting for itself lost drafts"; }
  done
  echo "generate --tp 2 and --pp 2 with --draft-model: the plain tokens"
fi
