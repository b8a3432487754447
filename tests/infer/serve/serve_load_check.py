"""`parallm serve` under load gives every request exactly its greedy tokens alone.

A tiny GPT-2 (tests/infer/tiny_text_model.py) is served by the continuous
engine, in the layout given (one process, or tp 2 / pp 2 under the
launcher), with the prefix cache on or off and a small KV pool (so
sequences are preempted and recomputed). 32 completion requests of mixed
lengths -- half of them share a long prefix, as a system prompt would --
arrive at once; each one's tokens (from logprobs), text and finish reason
must equal what the same request gets when sent alone afterwards. Then the
block pool must be whole again (/metrics: no KV block in use), and the
server exits 0 on SIGTERM.
Usage: serve_load_check.py WORKDIR PARALLM LAYOUT PREFIX [LAUNCHER...]
  LAYOUT: tp1 | tp2 | pp2; PREFIX: on | off"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from check_support import check, failures, listening_port, rank0_pid  # noqa: E402,F401
from tiny_text_model import build  # noqa: E402

work, parallm, layout, prefix = sys.argv[1:5]
launcher = sys.argv[5:]
tp, pp = {"tp1": (1, 1), "tp2": (2, 1), "pp2": (1, 2)}[layout]
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
build(model_dir, n_positions=512, seed=5)
env = dict(os.environ, OMP_NUM_THREADS="1")
cmd = launcher + [parallm, "serve", "--model", model_dir, "--port", "0", "--tp", str(tp),
                  "--pp", str(pp), "--max-running", "12", "--max-waiting", "64",
                  "--max-batched-tokens", "96", "--block-size", "8",
                  "--kv-cache-memory", str(32 * 2 * 2 * 8 * 64 * 4 // (tp * pp))]  # 32 blocks
if prefix == "off":
    cmd.append("--no-prefix-cache")
server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)


try:
    port = listening_port(server)
    assert port, "the server printed no listening line"
    base = f"http://127.0.0.1:{port}"

    resets = []

    def post(body):
        # A burst of connections now and then sees one reset before any
        # response (cpp-httplib is built with a listen backlog of 5); the
        # client tries again, as the openai client does, and it is counted.
        for attempt in range(3):
            req = urllib.request.Request(base + "/v1/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=300) as r:
                    c = json.loads(r.read())["choices"][0]
                return c["logprobs"]["tokens"], c["text"], c["finish_reason"]
            except (ConnectionResetError, ConnectionRefusedError) as e:
                resets.append(repr(e))
        raise RuntimeError("three connection resets in a row")

    shared = "You are a careful assistant. Answer briefly and check every step twice. " * 2
    bodies = []
    for i in range(32):
        text = (shared if i % 2 else "") + "the quick brown fox " * (1 + (i * 5) % 9) + str(i)
        bodies.append({"model": model_dir, "prompt": text, "max_tokens": 6 + (i * 7) % 19,
                       "temperature": 0, "logprobs": 1})
    together = [None] * len(bodies)

    def one(i):
        together[i] = post(bodies[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    same = 0
    for i, body in enumerate(bodies):
        alone = post(body)
        if together[i] == alone:
            same += 1
        else:
            print(f"  request {i}: together {together[i]!r}\n             alone    {alone!r}")
    check(same == len(bodies), f"{layout}, prefix cache {prefix}: {same}/{len(bodies)} requests "
          "under load equal the same request alone")
    print(f"connections reset before a response and retried: {len(resets)}")
    metrics = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()

    def metric(name):
        m = re.search(rf"^{name} (\S+)$", metrics, re.M)
        return float(m.group(1)) if m else None

    check(metric("parallm_kv_cache_blocks_used") == 0, "every KV block is free after the load "
          f"(used {metric('parallm_kv_cache_blocks_used')} of {metric('parallm_kv_cache_blocks_total')})")
    hits, pre = metric("parallm_prefix_cache_hits_total"), metric("parallm_preemptions_total")
    print(f"prefix-cache hits {hits} tokens, preemptions {pre}")
    if prefix == "on":
        check(hits > 0, "the shared prefix was read from the cache")
    else:
        check(hits == 0, "no prefix-cache hits with the cache off")
    check(pre > 0, "the small pool made the engine preempt and recompute")
finally:
    # Under mpirun the signal goes to rank 0, which owns the server and ends
    # the other ranks' loops (mpirun itself reports a signal it received as
    # a failure, whatever the ranks did).
    os.kill(rank0_pid(server.pid) if launcher else server.pid, signal.SIGTERM)
    try:
        rc = server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        rc = "killed"
check(rc == 0, f"the server exits 0 on SIGTERM (got {rc})")
sys.exit(1 if failures else 0)
