"""`parallm serve` with speculative decoding gives every request the greedy
tokens of a server without it, under concurrent load.

A tiny GPT-2 (tests/infer/tiny_text_model.py) is served plain, then with
the drafts given (--ngram-draft 3, or --draft-model with the model itself,
whose drafts the target always accepts), in the layout given (one process,
or tp 2 / pp 2 under the launcher: a draft model runs on rank 0 alone). 16
completion requests of mixed lengths arrive at once, streamed and not;
each one's tokens (from logprobs), text and finish reason must equal the
plain server's. /metrics must count drafts proposed and accepted (all of
them for the model drafting for itself), and no KV block may stay in use.
Usage: serve_speculative_check.py WORKDIR PARALLM LAYOUT DRAFT [LAUNCHER...]
  LAYOUT: tp1 | tp2 | pp2; DRAFT: ngram | model"""
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

work, parallm, layout, draft = sys.argv[1:5]
launcher = sys.argv[5:]
tp, pp = {"tp1": (1, 1), "tp2": (2, 1), "pp2": (1, 2)}[layout]
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
build(model_dir, n_positions=512, seed=5)
env = dict(os.environ, OMP_NUM_THREADS="1")
bodies = []
for i in range(16):
    text = "the quick brown fox " * (1 + (i * 5) % 7) + "jumps over " * (i % 3) + str(i)
    bodies.append({"model": model_dir, "prompt": text, "max_tokens": 8 + (i * 7) % 17,
                   "temperature": 0, "logprobs": 1, "stream": i % 2 == 1})


def post(base, body):
    """tokens, text, finish_reason of one completion, streamed or not."""
    for _ in range(3):
        req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                if not body["stream"]:
                    c = json.loads(r.read())["choices"][0]
                    return c["logprobs"]["tokens"], c["text"], c["finish_reason"]
                tokens, text, finish = [], "", None
                for line in r.read().decode().splitlines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    c = json.loads(line[6:])["choices"][0]
                    tokens += (c.get("logprobs") or {}).get("tokens") or []
                    text += c.get("text") or ""
                    finish = c.get("finish_reason") or finish
                return tokens, text, finish
        except (ConnectionResetError, ConnectionRefusedError):
            continue  # cpp-httplib's backlog of 5 resets a burst now and then
    raise RuntimeError("three connection resets in a row")


def serve(extra, use_launcher):
    """Starts a server, sends every body at once; returns results and /metrics."""
    cmd = (launcher if use_launcher else []) + [
        parallm, "serve", "--model", model_dir, "--port", "0", "--tp",
        str(tp if use_launcher else 1), "--pp", str(pp if use_launcher else 1),
        "--max-running", "8", "--max-batched-tokens", "96",
        "--block-size", "8"] + extra
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        port = listening_port(server)
        assert port, "the server printed no listening line"
        base = f"http://127.0.0.1:{port}"
        got = [None] * len(bodies)

        def one(i):
            got[i] = post(base, bodies[i])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        metrics = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
    finally:
        os.kill(rank0_pid(server.pid) if use_launcher and launcher else server.pid,
                signal.SIGTERM)
        try:
            rc = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            rc = "killed"
    check(rc == 0, f"the server ({' '.join(extra) or 'plain'}) exits 0 on SIGTERM (got {rc})")
    return got, metrics


def metric(metrics, name):
    m = re.search(rf"^{name} (\S+)$", metrics, re.M)
    return float(m.group(1)) if m else None


plain, _ = serve([], False)
flags = ["--ngram-draft", "3"] if draft == "ngram" else ["--draft-model", model_dir,
                                                         "--num-speculative-tokens", "3"]
spec, metrics = serve(flags, True)
same = 0
for i in range(len(bodies)):
    if spec[i] == plain[i]:
        same += 1
    else:
        print(f"  request {i}: speculative {spec[i]!r}\n             plain       {plain[i]!r}")
check(same == len(bodies), f"{layout}, {draft} drafts: {same}/{len(bodies)} concurrent requests "
      "equal the plain server's")
drafted = metric(metrics, "parallm_spec_decode_num_draft_tokens_total")
accepted = metric(metrics, "parallm_spec_decode_num_accepted_tokens_total")
print(f"drafts {drafted}, accepted {accepted}")
check(drafted is not None and drafted > 0, "/metrics counts draft tokens")
check(accepted is not None and 0 < accepted <= drafted, "/metrics counts accepted drafts")
if draft == "model":
    # Drafting for itself, only an EOS or a length cut inside a step can
    # leave a draft unaccepted: at most k = 3 drafts per request.
    check(drafted - accepted <= 3 * len(bodies), "the model drafting for itself: all but drafts "
          "cut by an end accepted")
check(metric(metrics, "parallm_kv_cache_blocks_used") == 0, "every KV block is free afterwards")
sys.exit(1 if failures else 0)
