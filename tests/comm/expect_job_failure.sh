#!/bin/sh
# expect_job_failure.sh LIMIT_S PATTERN COMMAND...: runs an MPI job that must
# fail, and passes when it exits non-zero within LIMIT_S seconds with output
# matching PATTERN (an extended regular expression). A job still running
# after 3 x LIMIT_S is killed (that is a hang, and fails the test).
limit=$1
pattern=$2
shift 2
out=$(mktemp)
start=$(date +%s.%N)
timeout -k 5 $((limit * 3)) "$@" >"$out" 2>&1
rc=$?
end=$(date +%s.%N)
cat "$out"
elapsed=$(awk "BEGIN { printf \"%.1f\", $end - $start }")
echo "--- exit code $rc after $elapsed s"
fail=0
if [ "$rc" -eq 0 ]; then echo "FAIL: the job exited 0"; fail=1; fi
if [ "$rc" -eq 124 ]; then echo "FAIL: the job hung"; fail=1; fi
if awk "BEGIN { exit !($end - $start > $limit) }"; then
  echo "FAIL: the job took longer than $limit s"; fail=1
fi
if ! grep -Eq "$pattern" "$out"; then echo "FAIL: no line matches: $pattern"; fail=1; fi
rm -f "$out"
[ "$fail" -eq 0 ] && echo "PASS: failed as expected in $elapsed s"
exit "$fail"
