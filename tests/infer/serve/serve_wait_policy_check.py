"""`parallm serve` waits passively by default, unless told otherwise.

libgomp reads OMP_WAIT_POLICY only when it is loaded, so a server started
without it (and without GOMP_SPINCOUNT) runs itself again with
OMP_WAIT_POLICY=PASSIVE: the listening process (same pid as started) must
have it in its environment. One started with OMP_WAIT_POLICY=active, or
with GOMP_SPINCOUNT, keeps what it was given.
Usage: serve_wait_policy_check.py WORKDIR PARALLM"""
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from check_support import check, failures, listening_port  # noqa: E402,F401
from tiny_text_model import build  # noqa: E402

work, parallm = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
build(model_dir, n_positions=128, seed=5)


def served_environ(extra):
    """The environment of the listening server started with extra set."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(extra, OMP_NUM_THREADS="2")
    server = subprocess.Popen([parallm, "serve", "--model", model_dir, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stdout.readline()
        assert re.search(r"listening on http://", line), (line, server.stderr.read())
        with open(f"/proc/{server.pid}/environ", "rb") as f:
            got = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
        check(code == 0, f"  exit code {code} on SIGTERM")
        err = server.stderr.read()
        check("could not restart" not in err, "  no complaint about the restart")
        return {k.decode(): v.decode() for k, v in got.items()}
    finally:
        if server.poll() is None:
            server.kill()


e = served_environ({})
check(e.get("OMP_WAIT_POLICY") == "PASSIVE", "unset: the server runs with OMP_WAIT_POLICY=PASSIVE")
e = served_environ({"OMP_WAIT_POLICY": "active"})
check(e.get("OMP_WAIT_POLICY") == "active", "OMP_WAIT_POLICY=active is kept")
e = served_environ({"GOMP_SPINCOUNT": "300000"})
check("OMP_WAIT_POLICY" not in e and e.get("GOMP_SPINCOUNT") == "300000",
      "GOMP_SPINCOUNT given: no wait policy is added")
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
