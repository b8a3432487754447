#!/usr/bin/env bash
# parallm launch on commands other than training: a command that always
# fails is restarted --max-restarts times with doubling back-off and then
# given up with the last failure named and its exit status passed on; a
# command that prints no step line within --hang-timeout is ended as hung,
# with everything it started (a stopped child too); a SIGINT to the
# supervisor ends the job without a restart; bad options are refused.
# Usage: supervisor_check.sh PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. The budget: 1 attempt + 2 restarts, then the child's status.
"$bin" launch --max-restarts 2 --backoff 0.1 --events "$work/ev1.jsonl" -- \
  sh -c 'echo "parallm: rank 0 of 1: error: the disk is full" >&2; exit 3' 2>"$work/1.log"
rc=$?
[ "$rc" = 3 ] || fail "exit status $rc, expected the child's 3: $(cat "$work/1.log")"
[ "$(grep -c "failed after" "$work/1.log")" = 3 ] || fail "not 3 attempts: $(cat "$work/1.log")"
grep -q "restarting in 0.1 s (restart 1 of 2)" "$work/1.log" || fail "no first back-off line"
grep -q "restarting in 0.2 s (restart 2 of 2)" "$work/1.log" || fail "the back-off did not double"
grep -q "giving up: 2 restart(s) allowed (--max-restarts) and all used; the last failure: rank 0: error: the disk is full" \
  "$work/1.log" || fail "no clear last message: $(cat "$work/1.log")"
grep -q '"event":"gave_up"' "$work/ev1.jsonl" || fail "no gave_up event"
echo "ok: a failing command restarted twice with doubling back-off, then given up naming the failure"

# 2. A hang: a step line, then nothing; a stopped grandchild must go too.
cat > "$work/hang.sh" <<'SH'
sleep 300 & kill -STOP $!
echo $! > "$1"
echo "step     1/9 | loss 1.0 |" >&2
sleep 300
SH
t0=$(date +%s)
"$bin" launch --max-restarts 0 --hang-timeout 1 -- sh "$work/hang.sh" "$work/child.pid" 2>"$work/2.log"
rc=$?
t1=$(date +%s)
[ "$rc" != 0 ] || fail "a hung command reported success"
[ $((t1 - t0)) -lt 20 ] || fail "the hang was ended after $((t1 - t0)) s"
grep -q "no progress for 1 s after step 1" "$work/2.log" || fail "the hang was not named: $(cat "$work/2.log")"
child=$(cat "$work/child.pid")
sleep 0.2
if kill -0 "$child" 2>/dev/null && [ "$(awk '{print $3}' /proc/"$child"/stat)" != Z ]; then
  fail "the stopped child $child outlived the job"
fi
echo "ok: a command silent for the hang timeout was ended with its stopped child"

# 3. A signal to the supervisor ends the job, without a restart: the job
# runs in a session of its own, out of reach of a terminal's Ctrl-C.
"$bin" launch --max-restarts 3 -- sh -c 'echo $$ > "$0"; sleep 300' "$work/job.pid" 2>"$work/3.log" &
sup=$!
for _ in $(seq 100); do [ -s "$work/job.pid" ] && break; sleep 0.05; done
kill -INT "$sup"
wait "$sup"
rc=$?
[ "$rc" = 130 ] || fail "the supervisor exited $rc after SIGINT, expected 130: $(cat "$work/3.log")"
grep -q "signal 2 received: the job is ended (no restart)" "$work/3.log" || fail "said: $(cat "$work/3.log")"
job=$(cat "$work/job.pid")
sleep 0.2
if kill -0 "$job" 2>/dev/null && [ "$(awk '{print $3}' /proc/"$job"/stat)" != Z ]; then
  fail "the job $job outlived the interrupted supervisor"
fi
echo "ok: SIGINT to the supervisor ended the job, with no restart"

# 4. Bad options.
err=$("$bin" launch --max-restarts -1 -- true 2>&1) && fail "--max-restarts -1 accepted"
echo "$err" | grep -q "max-restarts must be >= 0, got -1" || fail "said: $err"
err=$("$bin" launch -- no-such-command-px 2>&1) && fail "a missing command succeeded"
echo "$err" | grep -q "cannot run 'no-such-command-px': not found on PATH" || fail "said: $err"
echo "ok: bad options and a missing command refused"
