"""A rank that dies under `mpirun -np 2 parallm serve --tp 2` ends the job.

The tiny GPT-2 is served over two ranks; while a streamed request is being
generated (so the ranks are inside a step), one rank (argument VICTIM: 1 is
a follower, which leaves rank 0's HTTP side up; 0 is the leader) is killed
with SIGKILL. The launcher must then end the whole job within a timeout,
with a nonzero status and a message naming the death, and the client's
stream must end (no hung server, no hung client).
Usage: serve_rank_death_check.py WORKDIR PARALLM VICTIM LAUNCHER..."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from check_support import check, descendants, failures, listening_port, rank_pid  # noqa: E402,F401
from tiny_text_model import build  # noqa: E402

work, parallm, victim = sys.argv[1], sys.argv[2], int(sys.argv[3])
launcher = sys.argv[4:]
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
build(model_dir, n_positions=1024, seed=5)
TIMEOUT = 30


cmd = launcher + [parallm, "serve", "--model", model_dir, "--port", "0", "--tp", "2",
                  "--max-running", "4"]
server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
output = []
try:
    port = listening_port(server, output)
    assert port, "the server printed no listening line:\n" + "".join(output)
    reader = threading.Thread(target=lambda: output.extend(server.stdout), daemon=True)
    reader.start()

    # A long stream, read until the connection ends.
    stream = {"bytes": 0, "ended": None}
    started = threading.Event()
    body = json.dumps({"prompt": "hello world", "n": 4, "max_tokens": 1000, "temperature": 0,
                       "stream": True}).encode()

    def client():
        sock = socket.create_connection(("127.0.0.1", port), timeout=3 * TIMEOUT)
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nContent-Length: " + str(len(body)).encode() +
                     b"\r\n\r\n" + body)
        try:
            while True:
                got = sock.recv(65536)
                if not got:
                    break
                stream["bytes"] += len(got)
                if b"data: " in got:
                    started.set()
        except OSError:
            pass
        stream["ended"] = time.time()
        started.set()
        sock.close()
    t = threading.Thread(target=client, daemon=True)
    t.start()
    check(started.wait(timeout=TIMEOUT) and stream["ended"] is None,
          "a stream is under way before the kill")
    pid = rank_pid(server.pid, victim)
    check(pid is not None, f"found rank {victim}'s process ({pid})")
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    try:
        code = server.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        code = None
    took = time.time() - killed_at
    check(code is not None and code != 0,
          f"the job ended {took:.1f} s after the kill with status {code} (limit {TIMEOUT} s)")
    reader.join(timeout=5)
    text = "".join(output)
    check(re.search(rf"rank {victim} .*exited on signal 9", text) is not None,
          "the launcher says which rank died and how")
    t.join(timeout=TIMEOUT)
    check(stream["ended"] is not None and stream["ended"] - killed_at < TIMEOUT,
          f"the client's stream ended too ({stream['bytes']} bytes)")
finally:
    if server.poll() is None:
        for pid in descendants(server.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        server.kill()
        server.wait()
print("launcher output:\n" + "".join(output)[-1500:])
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
