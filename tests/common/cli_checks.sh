# Shell helpers of the CLI tests (sourced): fail with a message, and
# expect_error "substring" command...: the command must fail, say the
# substring on stderr, and print exactly one error line.
fail() { echo "FAIL: $*"; exit 1; }
expect_error() {
  local want="$1"; shift
  local err
  if err=$("$@" 2>&1 >/dev/null); then fail "'$*' succeeded, expected: $want"; fi
  echo "$err" | grep -qF -- "$want" || fail "'$*' said: $err -- expected: $want"
  [ "$(echo "$err" | grep -c 'error')" -eq 1 ] || fail "more than one error line: $err"
}
# tiny_corpus BIN DIR [LINES]: a one-sentence text, tokenized into
# DIR/data_train.bin (the corpus every training CLI test trains on).
tiny_corpus() {
  yes "the cat sat on the mat and the dog sat on the log." | head -n "${3:-300}" > "$2/doc.txt"
  "$1" tokenize "$2/doc.txt" --out "$2/data" >/dev/null || fail "tokenize"
}
# tiny_model_table [MAX_POSITIONS]: the [model] table of the tiny GPT-2 the
# CLI tests train (32 wide, 2 layers, 4 heads), for a run file.
tiny_model_table() {
  printf '[model]\npreset = "gpt2-tiny"\nhidden_size = 32\nnum_layers = 2\nnum_heads = 4\n'
  printf 'intermediate_size = 64\nmax_positions = %s\n' "${1:-32}"
}
# memory_dir: a fresh directory in memory (/dev/shm, where snapshots go),
# or under $TMPDIR on a machine without a writable /dev/shm.
memory_dir() {
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then mktemp -d -p /dev/shm parallm-test.XXXXXX; else mktemp -d; fi
}
