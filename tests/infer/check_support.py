"""Shared pieces of the inference and serving checks (Python scripts run by
ctest): a check that prints ok/FAIL and remembers the failures, and the port
a `parallm serve --port 0` prints in its listening line."""
import re

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def listening_port(server, seen=None):
    """Reads the server's stdout up to its listening line; returns the port
    (None if the output ended first). Lines read are appended to `seen`."""
    for line in server.stdout:
        if seen is not None:
            seen.append(line)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            print(line.strip(), flush=True)
            return int(m.group(1))
    return None
