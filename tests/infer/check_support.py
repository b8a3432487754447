"""Shared pieces of the inference and serving checks (Python scripts run by
ctest): a check that prints ok/FAIL and remembers the failures, the port
a `parallm serve --port 0` prints in its listening line, and an openai client
for such a server."""
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
