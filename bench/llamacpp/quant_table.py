#!/usr/bin/python3
"""The markdown summary of one bench/quant_bench.sh run (its results.jsonl): per model and
GGUF type, prompt and decode tok/s of llama.cpp and parallm with their ratios, the bytes
decode reads per token and the bandwidth that makes (bytes/token x decode tok/s) as a
fraction of the best measured read stream (4 KiB pages or huge, whichever is higher);
then the greedy-token agreement, the perplexities and the serving throughputs.
A parallm figure missing from the run prints as "n/a". Usage: quant_table.py RESULTS.jsonl
"""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
head = rows[0]
cpu, threads = head["cpu"], head["threads"]
bw = {k: max((r["gb_s"] for r in rows if r.get("kernel") == k), default=0.0)
      for k in ("copy", "read", "read4", "copy_huge", "read_huge", "read4_huge")}
best_read = max(bw["read"], bw["read_huge"])
bench = {(r["model"], r["type"], r["impl"]): r for r in rows
         if "impl" in r and "model" in r and "type" in r}
size = {(r["model"], r["type"]): r for r in rows if "bytes_per_token" in r}


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def ratio(a, b):
    return None if a is None or b is None or not b else a / b


def get(model, t, impl, key):
    r = bench.get((model, t, impl))
    return None if r is None or r.get("unavailable") else r.get(key)


end = next((r for r in rows if "load_end" in r), {"load_end": "?"})
print(f"\nCPU: {cpu}, {threads} threads; load average {head['load_start']} at start, "
      f"{end['load_end']} at end")
print(f"Read bandwidth ({threads} threads, best before/after): read stream {bw['read']:.1f} GB/s, "
      f"4 streams a thread {bw['read4']:.1f}; on huge pages {bw['read_huge']:.1f} / "
      f"{bw['read4_huge']:.1f}; STREAM copy {bw['copy']:.1f} ({bw['copy_huge']:.1f} huge)\n")
print("| model | type | CPU | prompt tok/s llama.cpp | parallm | ratio | decode tok/s llama.cpp "
      "| parallm | ratio | MB read per token | llama.cpp GB/s | of best read | parallm GB/s "
      "| of best read |")
print("|---|---|---|" + "---:|" * 11)
for (model, t), s in size.items():
    lp, ld = get(model, t, "llamacpp", "prefill_tok_s"), get(model, t, "llamacpp", "decode_tok_s")
    pp, pd = get(model, t, "parallm", "prefill_tok_s"), get(model, t, "parallm", "decode_tok_s")
    b = s["bytes_per_token"]
    lg = None if ld is None else b * ld / 1e9
    pg = None if pd is None else b * pd / 1e9
    print(f"| {model} | {t} | {cpu} | {fmt(lp, '.1f')} | {fmt(pp, '.1f')} | "
          f"{fmt(ratio(pp, lp), '.2f')} | {fmt(ld, '.2f')} | {fmt(pd, '.2f')} | "
          f"{fmt(ratio(pd, ld), '.2f')} | {b / 1e6:.1f} | {fmt(lg, '.2f')} | "
          f"{fmt(ratio(lg, best_read), '.0%')} | {fmt(pg, '.2f')} | {fmt(ratio(pg, best_read), '.0%')} |")

paths = next((r for r in rows if "greedy" in r), None)
if paths:
    ours = json.load(open(paths["greedy"]))
    theirs = {}
    for line in open(paths["greedy_parallm"]):
        r = json.loads(line)
        p = r.get("parallm") or {}
        ids = next((p[k] for k in ("token_ids", "ids", "tokens") if isinstance(p.get(k), list)), None)
        theirs[r["file"]] = ids
    print("\nGreedy ids (32 new tokens, temperature 0):")
    for f, r in ours.items():
        p = theirs.get(f)
        verdict = "parallm n/a" if p is None else (
            "identical" if p == r["ids"] else
            f"differ from token {next((i for i, (a, b) in enumerate(zip(p, r['ids'])) if a != b), min(len(p), len(r['ids'])))}")
        print(f"- {f}: llama.cpp {r['ids']} ({verdict})")

for r in rows:
    if "perplexity" in r:
        what = "n/a" if r.get("unavailable") else (f"{r['ppl']:.4f} +/- {r['ppl_err']:.4f}"
                                                   if r.get("ppl") is not None else r.get("note", "failed"))
        print(f"\nPerplexity {r['impl']} {r['perplexity']} (held-out text, 128-token chunks): {what}")
serve = {r["serve"]: r for r in rows if "serve" in r}
for name, r in serve.items():
    if r.get("unavailable"):
        print(f"\nServing {name}: n/a")
    else:
        print(f"\nServing {name}: {r['clients']} clients x {r['max_tokens']} tokens "
              f"({r['requests']} requests, {r['errors']} errors): {r['tok_per_s']:.1f} tok/s, "
              f"TTFT p50 {r['ttft_p50']:.2f} s, ITL p50 {1e3 * r['itl_p50']:.0f} ms")
if "llamacpp" in serve and "parallm" in serve and not serve["parallm"].get("unavailable"):
    print(f"parallm / llama-server: {serve['parallm']['tok_per_s'] / serve['llamacpp']['tok_per_s']:.2f}x "
          f"(goal >= 1.2x)")
