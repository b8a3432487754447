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


def descendants(root):
    """Pids of root's descendants (children by /proc/PID/stat's ppid)."""
    parent = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def rank_pid(root, rank):
    """The descendant of the launcher that runs parallm with this rank."""
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ and b"serve" in argv:
            return pid
    return None


def rank0_pid(launcher_pid):
    """The pid of the launcher's descendant that runs rank 0."""
    pid = rank_pid(launcher_pid, 0)
    if pid is None:
        raise RuntimeError("no rank 0 process found")
    return pid
