"""Shared pieces of the inference and serving checks (Python scripts run by
ctest): a check that prints ok/FAIL and remembers the failures, the port
a `parallm serve --port 0` prints in its listening line, an openai client
for such a server, and the rank-0 process of a server run under mpirun."""
import os
import re
import sys

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


def openai_client(server):
    """(client, port): the official openai client for a `parallm serve --port 0`
    started with stdout piped, once it listens; exits 1 when it never does."""
    port = listening_port(server)
    if port is None:
        print("no listening line")
        sys.exit(1)
    import openai
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                         max_retries=0, timeout=120), port


def rank0_pid(launcher_pid):
    """The pid of the launcher's descendant with OMPI_COMM_WORLD_RANK=0."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=0" in environ and b"serve" in argv and int(pid) != launcher_pid:
            return int(pid)
    raise RuntimeError("no rank 0 process found")
