"""What the GGUF and perplexity check scripts share: `check`, which prints
ok/FAIL and remembers each failure in `failed`, and `run`, which runs a
command on one thread and stops the script with its output when it fails."""
import os
import subprocess
import sys

failed = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if r.returncode != 0:
        print(" ".join(cmd), "\n", r.stdout, r.stderr)
        sys.exit(1)
    return r.stdout
