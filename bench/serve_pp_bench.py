"""Ad-hoc: completion tokens/s of `mpirun -np 2 parallm serve --pp 2` with
--pp-microbatches 1 (each step whole, one stage after the other) against 2
(micro-batches in flight), on the serving benchmark's model
(serve_bench_model.py). Each run: a server, one warm-up request, then REPS
bursts of N concurrent greedy completions of PROMPT_WORDS made-up words and
MAX_TOKENS tokens; later bursts repeat the prompts, so they hit the prefix
cache. Prints tokens/s per burst and the 1-minute load average.
Usage: serve_pp_bench.py PARALLM_BIN N PROMPT_WORDS MAX_TOKENS REPS [ROUNDS] [WORK]"""
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench_model import build  # noqa: E402

parallm = sys.argv[1]
N, PROMPT_WORDS, MAX, REPS = (int(a) for a in sys.argv[2:6])
ROUNDS = int(sys.argv[6]) if len(sys.argv) > 6 else 1
work = sys.argv[7] if len(sys.argv) > 7 else "/tmp/parallm_serve_pp_bench"
model = os.path.join(work, "model")
if not os.path.exists(os.path.join(model, "config.json")):
    build(model)
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS="1")


def run(micro_batches):
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader",
           "-np", "2", parallm, "serve", "--model", model, "--port", "0", "--pp", "2",
           "--threads", "1", "--max-running", str(N), "--pp-microbatches", str(micro_batches)]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        port = None
        for line in server.stdout:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "the server printed no listening line"

        def post(i, out):
            prompt = " ".join(f"w{i}x{j}" for j in range(PROMPT_WORDS))
            body = json.dumps({"model": model, "prompt": prompt, "max_tokens": MAX,
                               "temperature": 0}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                         {"Content-Type": "application/json"})
            out[i] = json.load(urllib.request.urlopen(req, timeout=600))["usage"][
                "completion_tokens"]

        post(N, {})  # warm-up
        rates = []
        for _ in range(REPS):
            out = {}
            threads = [threading.Thread(target=post, args=(i, out)) for i in range(N)]
            t0 = time.time()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rates.append(sum(out.values()) / (time.time() - t0))
        return rates
    finally:
        server.terminate()
        server.wait(60)


for _ in range(ROUNDS):
    for mb in (1, 2):
        load = os.getloadavg()[0]
        rates = run(mb)
        print(f"--pp-microbatches {mb}: tokens/s " + " ".join(f"{r:.1f}" for r in rates) +
              f"  (load {load:.1f})", flush=True)
