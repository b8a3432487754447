"""The `parallm serve` load benchmark (issue 14): builds a small GPT-2 shaped
model (serve_bench_model.py), serves it with the continuous and the static
batching engine at the same --max-running, and drives both with streamed
completions at Poisson arrival rates from light load to overload
(serve_bench_load.py). It reports TTFT / ITL / end-to-end p50 and p99 and
request and token throughput per rate, each engine's throughput at equal p99
latency, and a prefix-reuse test (a ~1k-token system prompt shared by short
questions: TTFT with the prefix cache against --no-prefix-cache). The
static baselines: `static` (a finished sequence leaves its batch) and
`static-padded` (its row stays in every forward until the batch ends, as
transformers' generate() and FasterTransformer run a batch). Prints
markdown tables, writes the results as JSON and the p99 latency (end to end,
and TTFT) against throughput plots as SVG. Every table names the CPU and the
load average, since the machine is shared.
Usage: serve_bench.py --parallm BIN [--work DIR] [--svg FILE] ..."""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_bench_model  # noqa: E402
from serve_bench_load import (percentile, poisson_offsets, run_arrivals, stream,  # noqa: E402
                              summarize)
from serve_bench_svg import line_plot  # noqa: E402

# Load requests: prompt lengths uniform in this range (tokens), output lengths
# drawn from these (the spread is what static batching pays for: a batch
# runs as long as its longest member).
PROMPT_RANGE = (32, 384)
MAX_TOKENS_CHOICES = (16, 32, 64, 128, 256)
RATE_FRACTIONS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)  # of the continuous engine's burst capacity
# p99 end-to-end targets: x the lightest rate's p99 (the worse engine's); the
# headline is HEADLINE_FACTOR. p99 TTFT targets are absolute (seconds).
TARGET_FACTORS = (1.5, 2.0, 3.0)
HEADLINE_FACTOR = 2.0
TTFT_TARGETS = (0.5, 1.0, 2.0)
ENGINES = ("continuous", "static", "static-padded")


def cpu_name():
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
    return m.group(1).strip() if m else "unknown CPU"


def load1():
    return os.getloadavg()[0]


class Server:
    """`parallm serve --port 0 ...` for a with-block; .port once it listens."""

    def __init__(self, parallm, model_dir, args, env, log_path):
        self.cmd = [parallm, "serve", "--model", model_dir, "--port", "0"] + list(args)
        self.env, self.log_path = env, log_path

    def __enter__(self):
        self.log = open(self.log_path, "a")
        self.log.write("$ " + " ".join(self.cmd) + "\n")
        self.log.flush()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=self.env)
        for line in self.proc.stdout:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.banner = line.strip()
                return self
        self.proc.wait()
        raise RuntimeError(f"the server exited ({self.proc.returncode}) before listening; "
                           f"see {self.log_path}")

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "killed"
        self.log.write(f"exit {rc}\n")
        self.log.close()
        if rc != 0 and exc[0] is None:
            raise RuntimeError(f"the server exited {rc} on SIGTERM; see {self.log_path}")

    def cpu_seconds(self):
        """User + system CPU time the server has used (all its threads)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def metrics(self):
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=30).read()
        return {m.group(1): float(m.group(2))
                for m in re.finditer(r"^(\w+) (\S+)$", text.decode(), re.M)}


def server_env(threads, wait_policy="PASSIVE"):
    """wait_policy None: libgomp's own default. parallm serve restarts itself
    with OMP_WAIT_POLICY=PASSIVE when neither that nor GOMP_SPINCOUNT is set,
    so the default is given explicitly: GOMP_SPINCOUNT=300000 is what libgomp
    uses when OMP_WAIT_POLICY is unset (spin that long, then sleep)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    else:
        env["GOMP_SPINCOUNT"] = "300000"
    return env


def load_bodies(n, seed, vocab):
    rng = random.Random(seed)
    return [{"prompt": [rng.randint(1, vocab - 1) for _ in range(rng.randint(*PROMPT_RANGE))],
             "max_tokens": rng.choice(MAX_TOKENS_CHOICES), "temperature": 0} for _ in range(n)]


def warm_up(port):
    stream(port, "/v1/completions", {"prompt": list(range(1, 65)), "max_tokens": 8,
                                     "temperature": 0})


def ms(v):
    return "-" if v is None else f"{v * 1e3:.0f}"


def sec(v):
    return "-" if v is None else f"{v:.2f}"


def threads_probe(a, model_dir, log):
    """One request alone (256-token prompt, 32 tokens) under thread settings."""
    rows = []
    # Ids the warm-up does not start with, so no prefix-cache hit helps.
    body = {"prompt": list(range(300, 556)), "max_tokens": 32, "temperature": 0}
    n = a.threads
    for label, threads, policy in [(f"--threads {n}, OMP_WAIT_POLICY=PASSIVE", n, "PASSIVE"),
                                   (f"--threads {n}, libgomp's default wait policy", n, None),
                                   ("--threads 1", 1, "PASSIVE")]:
        with Server(a.parallm, model_dir, ["--threads", str(threads)], server_env(threads, policy),
                    log) as s:
            warm_up(s.port)
            l0 = load1()
            o = stream(s.port, "/v1/completions", body)
            if o.error:
                raise RuntimeError(f"threads probe '{label}': {o.error}")
            rows.append({"setting": label, "load1": l0, "ttft": o.ttft,
                         "itl_p50": percentile(o.itl, 50), "e2e": o.latency})
            print(f"  {label}: TTFT {ms(o.ttft)} ms, ITL p50 {ms(rows[-1]['itl_p50'])} ms, "
                  f"e2e {sec(o.latency)} s (load {l0:.1f})", flush=True)
    return rows


def batch_cost(a, model_dir, log, vocab):
    """Decode cost against batch size: k equal requests at once (32-token
    prompts, 96 tokens each) decode in lockstep, so the median gap between
    chunks is one step of k sequences; the server's CPU time over the burst
    per output token is the same cost, but blind to other processes' load."""
    rows = []
    sizes = (1, 2, 4, 8, 16, 32)
    # Equal requests end together, so static-padded's steps are static's.
    for engine in [e for e in a.engines if e != "static-padded"]:
        args = ["--engine", engine, "--threads", str(a.threads), "--max-running",
                str(max(sizes)), "--max-batched-tokens", "2048",
                "--kv-cache-memory", a.kv_cache_memory, "--dtype", a.dtype]
        with Server(a.parallm, model_dir, args, server_env(a.threads), log) as s:
            warm_up(s.port)
            rng = random.Random(5)
            for k in sizes:
                bodies = [{"prompt": [rng.randint(1, vocab - 1) for _ in range(32)],
                           "max_tokens": 96, "temperature": 0} for _ in range(k)]
                l0, c0 = load1(), s.cpu_seconds()
                r = summarize(*run_arrivals(s.port, "/v1/completions", bodies, [0.0] * k))
                if r["errors"]:
                    raise RuntimeError(f"batch cost {engine} x{k}: {r['first_error']}")
                rows.append({"engine": engine, "batch": k, "load1": l0, "step_s": r["itl_p50"],
                             "tok_per_s": k / r["itl_p50"],
                             "cpu_ms_per_token": (s.cpu_seconds() - c0) * 1e3 / r["output_tokens"]})
    return rows


def engine_args(a, engine):
    return ["--engine", engine, "--threads", str(a.threads), "--max-running", str(a.max_running),
            "--max-waiting", "256", "--max-batched-tokens", str(a.max_batched_tokens),
            "--kv-cache-memory", a.kv_cache_memory, "--dtype", a.dtype]


def load_run(a, model_dir, log, engine, bodies, offsets):
    with Server(a.parallm, model_dir, engine_args(a, engine), server_env(a.threads), log) as s:
        warm_up(s.port)
        l0, c0 = load1(), s.cpu_seconds()
        outcomes, wall = run_arrivals(s.port, "/v1/completions", bodies, offsets)
        cpu = s.cpu_seconds() - c0
        m = s.metrics()
    r = summarize(outcomes, wall)
    r.update(load1=l0, preemptions=m.get("parallm_preemptions_total", 0), cpu_s=cpu,
             tok_per_cpu_s=r["output_tokens"] / cpu if cpu > 0 else None)
    return r


def throughput_at(points, target):
    """points: [(p99, req/s, tok/s)] in rate order. The throughput at the
    highest rate whose p99 is within target, interpolated linearly in p99
    towards the next rate (which misses it); None when the lightest rate
    misses it; the best measured within it (a lower bound, flagged) when
    the highest rate meets it. (Noise can make p99 dip at a higher rate:
    the highest rate that meets the target counts, for both engines alike.)"""
    ok = [i for i, p in enumerate(points) if p[0] <= target]
    if not ok or ok[0] != 0:
        return None
    i = ok[-1]
    if i == len(points) - 1:
        best = max((points[j] for j in ok), key=lambda p: p[1])
        return {"req_per_s": best[1], "tok_per_s": best[2], "bound": True}
    (l0, r0, t0), (l1, r1, t1) = points[i], points[i + 1]
    f = (target - l0) / (l1 - l0)
    return {"req_per_s": r0 + f * (r1 - r0), "tok_per_s": t0 + f * (t1 - t0), "bound": False}


def prefix_run(a, model_dir, log, cache_on, system, questions):
    args = engine_args(a, "continuous") + ([] if cache_on else ["--no-prefix-cache"])
    with Server(a.parallm, model_dir, args, server_env(a.threads), log) as s:
        warm_up(s.port)

        def ask(q):
            body = {"messages": [{"role": "system", "content": system},
                                 {"role": "user", "content": q}],
                    "max_tokens": 8, "temperature": 0}
            o = stream(s.port, "/v1/chat/completions", body)
            if o.error:
                raise RuntimeError(f"prefix request: {o.error}")
            return o

        ask(questions[0])  # fills the cache (when on) with the system prompt's blocks
        l0 = load1()
        outs = [ask(q) for q in questions[1:]]
        m = s.metrics()
    ttfts = [o.ttft for o in outs]
    return {"cache": cache_on, "load1": l0, "requests": len(outs),
            "prompt_tokens": outs[0].prompt_tokens, "ttft_p50": percentile(ttfts, 50),
            "ttft_mean": sum(ttfts) / len(ttfts), "ttft_min": min(ttfts), "ttft_max": max(ttfts),
            "cached_tokens_mean": sum(o.cached_tokens for o in outs) / len(outs),
            "hits_total": m.get("parallm_prefix_cache_hits_total", 0),
            "queries_total": m.get("parallm_prefix_cache_queries_total", 0)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parallm", required=True, help="the parallm binary")
    p.add_argument("--work", default="/tmp/parallm_serve_bench", help="model cache and logs")
    p.add_argument("--requests", type=int, default=50, help="requests per rate")
    p.add_argument("--rates", type=float, nargs="*", help="req/s (default: fractions of capacity)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-running", type=int, default=8)
    p.add_argument("--max-batched-tokens", type=int, default=512)
    p.add_argument("--kv-cache-memory", default="64MiB")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"), help="serve --dtype")
    p.add_argument("--engines", default=",".join(ENGINES),
                   help="comma-separated: continuous first, then the static baselines")
    p.add_argument("--prefix-questions", type=int, default=10)
    p.add_argument("--system-words", type=int, default=1000, help="~ tokens of the system prompt")
    p.add_argument("--skip-threads-probe", action="store_true")
    p.add_argument("--shape", help="LAYERS,HIDDEN,HEADS of the model (default 4,256,4)")
    p.add_argument("--only-batch-cost", action="store_true",
                   help="measure only the decode cost against batch size")
    p.add_argument("--svg", help="write the latency/throughput plot here")
    p.add_argument("--json", help="write all results here (default WORK/results.json)")
    p.add_argument("--from-json", help="only print the report and plots of an earlier run")
    a = p.parse_args()
    a.engines = a.engines.split(",")
    if a.engines[0] != "continuous" or len(a.engines) < 2 or \
            any(e not in ENGINES for e in a.engines):
        p.error(f"--engines must be continuous and then some of {ENGINES[1:]}, got {a.engines}")
    if a.from_json:
        with open(a.from_json) as f:
            finish(json.load(f), a.svg)
        return
    os.makedirs(a.work, exist_ok=True)
    log = os.path.join(a.work, "servers.log")
    t_start = time.time()
    cpu = cpu_name()
    res = {"cpu": cpu, "cores": len(os.sched_getaffinity(0)), "threads": a.threads,
           "load_start": os.getloadavg(), "max_running": a.max_running,
           "max_batched_tokens": a.max_batched_tokens, "requests_per_rate": a.requests}
    print(f"CPU: {cpu} ({res['cores']} cores visible); server --threads {a.threads}, "
          f"OMP_NUM_THREADS={a.threads}", flush=True)
    print("load average at start: " + " ".join(f"{x:.2f}" for x in res["load_start"]), flush=True)
    shape, name = None, "model"
    if a.shape:
        layers, hidden, heads = (int(x) for x in a.shape.split(","))
        shape = dict(n_layer=layers, n_embd=hidden, n_head=heads)
        name = f"model-{layers}x{hidden}x{heads}"
    model_dir = serve_bench_model.build(os.path.join(a.work, name), shape=shape)
    res["model"] = name
    with open(os.path.join(model_dir, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]

    if not a.skip_threads_probe:
        print("threads probe (one request alone, continuous engine):", flush=True)
        res["threads_probe"] = threads_probe(a, model_dir, log)

    print("decode step time against batch size:", flush=True)
    res["batch_cost"] = batch_cost(a, model_dir, log, vocab)
    for r in res["batch_cost"]:
        print(f"  {r['engine']:13s} batch {r['batch']:2d}: step {ms(r['step_s'])} ms, "
              f"{r['cpu_ms_per_token']:.2f} CPU-ms per token (load {r['load1']:.1f})", flush=True)

    if a.only_batch_cost:
        with open(a.json or os.path.join(a.work, "batch_cost.json"), "w") as f:
            json.dump(res, f, indent=1)
        return

    rates = a.rates
    if not rates:
        burst = load_bodies(4 * a.max_running, 999, vocab)
        cal = load_run(a, model_dir, log, "continuous", burst, [0.0] * len(burst))
        res["capacity_req_per_s"] = cal["req_per_s"]
        rates = [round(f * cal["req_per_s"], 2) for f in RATE_FRACTIONS]
        print(f"calibration: a burst of {len(burst)} requests ran at {cal['req_per_s']:.2f} req/s"
              f" on the continuous engine; rates {rates}", flush=True)
    bodies = load_bodies(a.requests, 1, vocab)
    runs = []
    # Engines alternate at each rate, so a change in the machine's load
    # during the sweep falls on both alike.
    for i, rate in enumerate(rates):
        for engine in a.engines:
            offsets = poisson_offsets(rate, a.requests, 100 + i)
            r = load_run(a, model_dir, log, engine, bodies, offsets)
            r.update(engine=engine, rate=rate)
            runs.append(r)
            print(f"  {engine:13s} rate {rate:5.2f}: {r['req_per_s']:.2f} req/s, "
                  f"{r['tok_per_s']:.0f} tok/s, {r['tok_per_cpu_s']:.0f} tok/CPU-s, "
                  f"e2e p99 {sec(r['e2e_p99'])} s, "
                  f"errors {r['errors']} (load {r['load1']:.1f})", flush=True)
    res["rates"], res["runs"] = rates, runs

    system = serve_bench_model.lexicon_text(a.system_words, seed=7)
    questions = [serve_bench_model.lexicon_text(8, seed=1000 + i) + "?"
                 for i in range(a.prefix_questions + 1)]
    res["prefix"] = [prefix_run(a, model_dir, log, on, system, questions) for on in (True, False)]
    res["load_end"] = os.getloadavg()
    res["duration_s"] = time.time() - t_start
    with open(a.json or os.path.join(a.work, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    finish(res, a.svg)


def finish(res, svg):
    """The headline targets, the tables, the plots."""
    if not res.get("runs"):  # --only-batch-cost
        report_batch_cost(res, f"{res['cpu']}, server --threads {res['threads']}, "
                               f"{res.get('model', 'model')}")
        return
    def curve(e, key):
        return [(r[key], r["req_per_s"], r["tok_per_s"]) for r in res["runs"] if r["engine"] == e]

    # Each baseline against continuous, the e2e targets from the worse of
    # the two at the lightest rate (so both meet them there).
    res["targets"] = []
    for b in baselines(res):
        pair = ("continuous", b)
        base = max(curve(e, "e2e_p99")[0][0] for e in pair)
        res["targets"] += [{"baseline": b, "metric": "e2e_p99", "factor": k, "p99_s": k * base,
                            **{e: throughput_at(curve(e, "e2e_p99"), k * base) for e in pair}}
                           for k in TARGET_FACTORS]
        res["targets"] += [{"baseline": b, "metric": "ttft_p99", "factor": None, "p99_s": t,
                            **{e: throughput_at(curve(e, "ttft_p99"), t) for e in pair}}
                           for t in TTFT_TARGETS]
    report(res)
    if svg:
        plot(res, svg)


def engines_of(res, key="runs"):
    """The engines in res[key], continuous first (older results: two)."""
    return [e for e in ENGINES if any(r["engine"] == e for r in res[key])]


def baselines(res):
    return engines_of(res)[1:]


def report_batch_cost(res, cpu):
    """The decode cost table (when the run measured it)."""
    if not res.get("batch_cost"):
        return
    print(f"\n### Decode cost against batch size ({cpu}; wall step, server CPU per token)\n")
    sizes = sorted({r["batch"] for r in res["batch_cost"]})
    print("| engine | " + " | ".join(f"batch {k}" for k in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for e in engines_of(res, "batch_cost"):
        cells = [f"{r['step_s'] * 1e3:.1f} ms, {r.get('cpu_ms_per_token', 0):.2f} CPU-ms/tok"
                 for k in sizes for r in res["batch_cost"]
                 if r["engine"] == e and r["batch"] == k]
        print(f"| {e} | " + " | ".join(cells) + " |")


def report(res):
    cpu = f"{res['cpu']}, server --threads {res['threads']}"
    noisy = max(res["load_start"][0], res["load_end"][0]) > 1.5
    if res.get("threads_probe"):
        print(f"\n### Threads probe ({res['cpu']}; one request alone: 256-token prompt, "
              "32 tokens, continuous engine)\n")
        print("| setting | load | TTFT ms | ITL p50 ms | e2e s |")
        print("|---|---|---|---|---|")
        for r in res["threads_probe"]:
            print(f"| {r['setting']} | {r['load1']:.1f} | {ms(r['ttft'])} | {ms(r['itl_p50'])} "
                  f"| {sec(r['e2e'])} |")
    report_batch_cost(res, cpu)
    print(f"\n### Load sweep ({cpu}; --max-running {res['max_running']}, "
          f"{res['requests_per_rate']} requests per rate)\n")
    print("| engine | rate req/s | load | errors | req/s | out tok/s | tok/CPU-s | TTFT p50 ms "
          "| TTFT p99 ms | ITL p50 ms | ITL p99 ms | e2e p50 s | e2e p99 s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(res["runs"], key=lambda r: (r["engine"], r["rate"])):
        eff = r.get("tok_per_cpu_s")
        print(f"| {r['engine']} | {r['rate']:.2f} | {r['load1']:.1f} | {r['errors']} "
              f"| {r['req_per_s']:.2f} | {r['tok_per_s']:.0f} "
              f"| {'-' if eff is None else f'{eff:.0f}'} "
              f"| {ms(r['ttft_p50'])} | {ms(r['ttft_p99'])} | {ms(r['itl_p50'])} "
              f"| {ms(r['itl_p99'])} | {sec(r['e2e_p50'])} | {sec(r['e2e_p99'])} |")
    print(f"\n### Throughput at equal p99 latency ({cpu})\n")
    print("| p99 target | baseline | continuous req/s | baseline req/s | ratio "
          "| continuous tok/s | baseline tok/s |")
    print("|---|---|---|---|---|---|---|")

    def cell(t, key):
        if t is None:
            return "misses it"
        return ("≥ " if t["bound"] else "") + (f"{t[key]:.2f}" if key == "req_per_s"
                                                else f"{t[key]:.0f}")

    for t in res["targets"]:
        b = t.get("baseline", "static")
        c, s = t["continuous"], t[b]
        ratio = "-"
        if c and s:
            ratio = ("≥ " if c["bound"] and not s["bound"] else "") + \
                f"{c['req_per_s'] / s['req_per_s']:.2f}x"
            if s["bound"] and not c["bound"]:
                ratio = "≤ " + ratio
            if s["bound"] and c["bound"]:
                ratio += " (both at their highest rate)"
        what = (f"e2e {t['p99_s']:.2f} s ({t['factor']:g}x lightest)" if t["metric"] == "e2e_p99"
                else f"TTFT {t['p99_s']:g} s")
        if c and not s:
            ratio = f"{b} misses it at every rate"
        print(f"| {what} | {b} | {cell(c, 'req_per_s')} "
              f"| {cell(s, 'req_per_s')} | {ratio} | {cell(c, 'tok_per_s')} "
              f"| {cell(s, 'tok_per_s')} |")
    top = {e: max((r for r in res["runs"] if r["engine"] == e), key=lambda r: r["rate"])
           for e in engines_of(res)}
    c = top["continuous"]
    for b in baselines(res):
        s = top[b]
        if c.get("tok_per_cpu_s") and s.get("tok_per_cpu_s"):
            print(f"\nAt the highest rate ({c['rate']:.2f} req/s, overload): continuous "
                  f"{c['tok_per_s']:.0f} tok/s, {c['tok_per_cpu_s']:.0f} tok/CPU-s; {b} "
                  f"{s['tok_per_s']:.0f} tok/s, {s['tok_per_cpu_s']:.0f} tok/CPU-s; ratio "
                  f"{c['tok_per_s'] / s['tok_per_s']:.2f}x wall, "
                  f"{c['tok_per_cpu_s'] / s['tok_per_cpu_s']:.2f}x per CPU-second")
    on, off = res["prefix"]
    print(f"\n### Prefix reuse ({cpu}; a {on['prompt_tokens']}-token chat prompt, "
          f"{on['requests']} sequential requests after one warm-up)\n")
    print("| prefix cache | load | TTFT p50 ms | mean ms | min ms | max ms | cached tokens/request "
          "| hits / queries (metrics) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in res["prefix"]:
        print(f"| {'on' if r['cache'] else 'off (--no-prefix-cache)'} | {r['load1']:.1f} "
              f"| {ms(r['ttft_p50'])} | {ms(r['ttft_mean'])} | {ms(r['ttft_min'])} "
              f"| {ms(r['ttft_max'])} | {r['cached_tokens_mean']:.0f} "
              f"| {r['hits_total']:.0f} / {r['queries_total']:.0f} |")
    print(f"\nTTFT p50 without / with the prefix cache: {off['ttft_p50'] / on['ttft_p50']:.1f}x")
    print("load average at start: " + " ".join(f"{x:.2f}" for x in res["load_start"]) +
          "; at end: " + " ".join(f"{x:.2f}" for x in res["load_end"]) +
          (" (over 1.5 on this machine: the figures are noisy)" if noisy else ""))
    print(f"bench took {res['duration_s']:.0f} s")


def plot(res, path):
    """PATH: p99 end-to-end latency against throughput; PATH with _ttft: p99 TTFT."""
    # The headline target of the last baseline (the classic one when measured).
    head = next(t for t in reversed(res["targets"])
                if t["metric"] == "e2e_p99" and t["factor"] == HEADLINE_FACTOR)
    where = f"{res['cpu']}, --threads {res['threads']}, --max-running {res['max_running']}"
    for key, name, label, hlines in [
            ("e2e_p99", path, "p99 end-to-end latency (s)",
             [(head["p99_s"], f"p99 target {head['p99_s']:.1f} s")]),
            ("ttft_p99", re.sub(r"(\.svg)?$", "_ttft.svg", path, count=1),
             "p99 time to first token (s)", [])]:
        series = [(f"{e} batching", [(r["req_per_s"], r[key]) for r in res["runs"]
                                     if r["engine"] == e]) for e in engines_of(res)]
        with open(name, "w") as f:
            f.write(line_plot(series, f"{label.split(' (')[0]} vs throughput ({where})",
                              "throughput (requests/s)", label, hlines=hlines))


if __name__ == "__main__":
    main()
