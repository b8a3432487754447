"""The serving benchmark's client: streamed completion requests, one thread
each, sent at Poisson arrival times, and the figures of a run.
A request's TTFT is the time from sending it to its first chunk carrying
text, its ITL samples are the gaps between consecutive text chunks, its
latency the time to `data: [DONE]`; output tokens come from the usage chunk
(stream_options.include_usage), so they count what the server generated.
Invariant: arrival times are drawn before the run from a seeded generator,
so two engines at one rate see the same requests at the same offsets."""
import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Outcome:
    """One request's timings (seconds) and counts, or its error."""
    sent: float = 0.0
    ttft: float = None
    itl: list = field(default_factory=list)
    latency: float = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    error: str = None


def stream(port, path, body, timeout=600):
    """Sends one streamed request; returns its Outcome (times relative to sending)."""
    out = Outcome(sent=time.perf_counter())
    body = dict(body, stream=True, stream_options={"include_usage": True})
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            out.error = f"HTTP {resp.status}: {resp.read()[:200]!r}"
            return out
        last = None
        while True:
            line = resp.readline()
            if not line:
                out.error = "the stream ended without [DONE]"
                break
            now = time.perf_counter()
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                out.latency = now - out.sent
                break
            chunk = json.loads(data)
            if chunk.get("usage"):
                out.prompt_tokens = chunk["usage"]["prompt_tokens"]
                out.output_tokens = chunk["usage"]["completion_tokens"]
                details = chunk["usage"].get("prompt_tokens_details") or {}
                out.cached_tokens = details.get("cached_tokens", 0)
            for c in chunk.get("choices", []):
                text = c.get("text", (c.get("delta") or {}).get("content"))
                if text:
                    if last is None:
                        out.ttft = now - out.sent
                    else:
                        out.itl.append(now - last)
                    last = now
        conn.close()
    except (OSError, http.client.HTTPException, ValueError) as e:
        out.error = f"{type(e).__name__}: {e}"
    return out


def poisson_offsets(rate, n, seed):
    """n arrival offsets (seconds from the start) of a Poisson process of `rate` per second."""
    rng = random.Random(seed)
    t, offsets = 0.0, []
    for _ in range(n):
        offsets.append(t)
        t += rng.expovariate(rate)
    return offsets


def run_arrivals(port, path, bodies, offsets):
    """Sends bodies[i] at offsets[i] (a thread each); returns (outcomes, wall seconds)."""
    outcomes = [None] * len(bodies)

    def one(i):
        outcomes[i] = stream(port, path, bodies[i])

    threads = []
    start = time.perf_counter()
    for i, off in enumerate(offsets):
        delay = start + off - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=one, args=(i,), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    return outcomes, time.perf_counter() - start


def percentile(values, q):
    """Linear-interpolated percentile q in [0, 100] of values (None when empty)."""
    v = sorted(values)
    if not v:
        return None
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(outcomes, wall):
    """The run's figures: percentiles (seconds), throughputs, counts."""
    ok = [o for o in outcomes if o.error is None]
    itl = [g for o in ok for g in o.itl]
    tokens = sum(o.output_tokens for o in ok)
    return {
        "requests": len(outcomes),
        "errors": len(outcomes) - len(ok),
        "first_error": next((o.error for o in outcomes if o.error), None),
        "wall_s": wall,
        "req_per_s": len(ok) / wall,
        "tok_per_s": tokens / wall,
        "output_tokens": tokens,
        "ttft_p50": percentile([o.ttft for o in ok if o.ttft is not None], 50),
        "ttft_p99": percentile([o.ttft for o in ok if o.ttft is not None], 99),
        "itl_p50": percentile(itl, 50),
        "itl_p99": percentile(itl, 99),
        "e2e_p50": percentile([o.latency for o in ok], 50),
        "e2e_p99": percentile([o.latency for o in ok], 99),
        # Per output token (the vLLM paper's normalized latency).
        "norm_p99": percentile([o.latency / max(o.output_tokens, 1) for o in ok], 99),
    }
