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
