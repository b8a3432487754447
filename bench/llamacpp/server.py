"""A llama-server (or any OpenAI-compatible server command) run for the length of a
`with` block, on a free local port, for bench/llamacpp/greedy.py and serve_clients.py.
Invariant: the block starts only once GET /health answers 200, and the process is
ended (SIGTERM, then SIGKILL) however the block ends.
"""
import http.client
import json
import socket
import subprocess
import time
from contextlib import contextmanager


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body, timeout=600):
    """POST a JSON body; returns the decoded JSON answer (raises on a non-200)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    if resp.status != 200:
        raise RuntimeError(f"POST {path}: HTTP {resp.status}: {data[:300]!r}")
    return json.loads(data)


def healthy(port):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/health")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


@contextmanager
def serving(argv, port, log_path, start_timeout=300):
    """Runs argv (which must listen on port), yields the port once healthy."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + start_timeout
            while not healthy(port):
                if proc.poll() is not None:
                    raise RuntimeError(f"server exited with {proc.returncode}; see {log_path}")
                if time.time() > deadline:
                    raise RuntimeError(f"server not healthy after {start_timeout} s; see {log_path}")
                time.sleep(0.25)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
