"""Generation and serving on the test device follow the cpu bit for bit.

`parallm generate --device test` (model memory host code cannot read,
docs/devices.md) must print what `--device cpu` prints, sampled tokens,
logprobs and all: GPT-2 and LLaMA tiny models trained here and saved as
Hugging Face directories, one process (fp32, and bf16 GEMMs with logprobs),
tp 2 and pp 2 over MPI (through the test device's staging communicator).
Then `parallm serve --device test` (the continuous engine, a small KV pool
so that sequences are preempted, 12 requests at once; one process and pp 2)
answers every request as the cpu server does.
Usage: test_device_inference.py WORKDIR PARALLM LAUNCHER..."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request

from check_support import check, failures, listening_port

work, parallm = sys.argv[1:3]
launcher = sys.argv[3:]
os.makedirs(work, exist_ok=True)
env = dict(os.environ, OMP_NUM_THREADS="1")


def run(cmd):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout


text = os.path.join(work, "doc.txt")
with open(text, "w") as f:
    f.write("the cat sat on the mat and the dog sat on the log.\n" * 400)
run([parallm, "tokenize", text, "--out", os.path.join(work, "data")])
models = {}
for name in ("gpt2-tiny", "llama-tiny"):
    models[name] = os.path.join(work, "hf." + name)
    run([parallm, "train", "--model", name, "--data", os.path.join(work, "data_train.bin"),
         "--steps", "20", "--seq-len", "32", "--threads", "1", "--save-hf", models[name]])

prompts = ["--prompt", "the cat", "--prompt", "a dog sat on the"]
for name, ranks, flags in [("gpt2-tiny", 1, []), ("llama-tiny", 1, []),
                           ("llama-tiny", 1, ["--dtype", "bf16", "--logprobs", "2"]),
                           ("gpt2-tiny", 2, ["--tp", "2"]), ("llama-tiny", 2, ["--pp", "2"])]:
    out = {}
    for device in ("cpu", "test"):
        cmd = [parallm, "generate", "--model", models[name], *prompts, "--max-new-tokens", "12",
               "--temperature", "0.8", "--seed", "3", "--json", "--threads", "1",
               "--device", device, *flags]
        out[device] = run(launcher + ["-np", str(ranks)] + cmd if ranks > 1 else cmd)
    check(out["cpu"] == out["test"] and out["cpu"].count("tokens") == 2,
          f"generate {name} {ranks} rank(s) {' '.join(flags)}: the test device prints the cpu's")


def serve(device, ranks):
    cmd = [parallm, "serve", "--model", models["llama-tiny"], "--port", "0", "--device", device,
           "--max-running", "6", "--max-batched-tokens", "48", "--block-size", "8",
           "--kv-cache-memory", str(12 * 4 * 2 * 8 * 2 * 32 * 4 // ranks), "--threads", "1",
           "--pp", str(ranks)]  # 12 blocks
    if ranks > 1:
        cmd = launcher + ["-np", str(ranks)] + cmd
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        port = listening_port(server)
        assert port, f"the {device} server printed no listening line"
        answers = [None] * 12

        def one(i):
            body = {"model": models["llama-tiny"], "prompt": "the cat sat " * (1 + i % 4) + str(i),
                    "max_tokens": 5 + i % 7, "temperature": 0.7, "seed": i, "logprobs": 1}
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r:
                c = json.loads(r.read())["choices"][0]
            answers[i] = (c["text"], c["logprobs"]["tokens"], c["finish_reason"])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()
        m = re.search(rb"^parallm_preemptions_total (\S+)$", metrics, re.M)
        return answers, float(m.group(1)) if m else 0.0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


for ranks in (1, 2):
    (cpu, _), (dev, preempted) = serve("cpu", ranks), serve("test", ranks)
    same = sum(a == b and a is not None for a, b in zip(cpu, dev))
    check(same == 12, f"serve, {ranks} stage(s): {same}/12 concurrent requests on the test device "
          f"answered as on the cpu ({preempted:.0f} preemptions on the test device)")
sys.exit(1 if failures else 0)
