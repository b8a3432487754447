#!/usr/bin/env python3
"""The step-time model against measured runs on this machine (docs/planner.md,
"Validation"). Calibrates the machine (`parallm calibrate`, unless --profile
is given), then for each layout below asks `parallm plan --fixed ...` for its
predicted step time and the `parallm train` command line, runs that command
(OMP_NUM_THREADS = cores / ranks, at least 1) on bench/plan/validation.toml,
and takes the median step time after the warm-up steps (with --repeats R,
each layout of a rank count runs R times in turn, round after round, so a
slow spell of the shared machine falls on all of them, and the median is
over all R runs' steps; with --settle K, the contenders for the best two,
the three fastest so far and the planner's choice, then run K more rounds
in turn, so layouts a few percent apart are told apart by more than two
runs each). Also measures the
planner's own first choice for each rank count. Prints a table, the median
absolute error, whether the planner's choice is among the two fastest
measured layouts of its rank count, and writes everything as JSON. The MoE
plans get the experts' ep load (`--moe-load-from`) from a one-process run of
the MoE model, measured first.

usage: bench/plan_validation.py [--build build] [--profile P.json]
         [--steps 6] [--warmup 2] [--repeats 1] [--settle 0] [--reuse earlier.json]
         [--out results.json] [--only N,N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {"dense": os.path.join(ROOT, "bench", "plan", "validation.toml"),
           "moe": os.path.join(ROOT, "bench", "plan", "validation_moe.toml")}
SEQ, BATCH = 256, 16
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader",
          "--mca", "mpi_yield_when_idle", "1"]

# (model, ranks, --fixed keys): every key fixed, so the planner returns one layout.
BASE = "cp=1 tp=1 pp=1 dp=1 ep=1 zero=0 recompute=none sp=0"
LAYOUTS = [
    ("dense", 1, "mb=4"),
    ("dense", 1, "mb=16"),
    ("dense", 1, "mb=4 recompute=full"),
    ("dense", 2, "dp=2 mb=4"),
    ("dense", 2, "dp=2 mb=4 zero=1"),
    ("dense", 2, "dp=2 mb=4 zero=3"),
    ("dense", 2, "tp=2 mb=4 sp=1"),
    ("dense", 2, "tp=2 mb=4"),
    ("dense", 2, "pp=2 mb=2 schedule=1f1b"),
    ("dense", 2, "pp=2 mb=2 schedule=interleaved v=2"),
    ("dense", 2, "pp=2 mb=2 schedule=zb"),
    ("dense", 2, "cp=2 mb=4"),
    ("dense", 4, "dp=2 tp=2 mb=4 sp=1"),
    ("dense", 4, "pp=2 dp=2 mb=2 schedule=1f1b"),
    ("dense", 4, "tp=2 pp=2 mb=2 sp=1 schedule=1f1b"),
    ("dense", 8, "dp=2 tp=2 pp=2 mb=2 sp=1 schedule=1f1b"),
    ("moe", 1, "mb=4"),
    ("moe", 2, "dp=2 mb=4"),
    ("moe", 2, "dp=2 ep=2 mb=4"),
    ("moe", 4, "dp=4 mb=4 zero=1"),
    ("moe", 4, "dp=4 ep=4 mb=4 zero=1"),
    # The planner's MoE 4 choice in the first three runs (one micro-batch a
    # stage under ZB-H1): kept to watch its error (docs/planner.md).
    ("moe", 4, "pp=2 dp=2 ep=2 mb=8 zero=1 schedule=zb"),
]


def fixed_items(spec):
    keys = dict(kv.split("=") for kv in BASE.split())
    keys.update(dict(kv.split("=") for kv in spec.split()))
    return [f"{k}={v}" for k, v in keys.items()]


def plan(exe, profile, model, ranks, fixed, work, load_from=None):
    out = os.path.join(work, "plan.json")
    cmd = [exe, "plan", "--model", CONFIGS[model], "--devices", str(ranks), "--profile", profile,
           "--seq-len", str(SEQ), "--global-batch-size", str(BATCH), "--top", "1",
           "--json", out]
    if load_from:
        cmd += ["--moe-load-from", load_from]
    if fixed:
        cmd += ["--fixed"] + fixed
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        best = json.load(f)["best"]
    if not best:
        sys.exit(f"plan found no layout for {ranks} ranks, --fixed {' '.join(fixed)}")
    return best[0]


def measure(exe, cand, ranks, cores, steps, warmup, work, metrics_name="metrics.jsonl"):
    words = cand["command"].split()
    train = words[words.index("train") + 1:]  # after "mpirun -np N parallm train"
    metrics = os.path.join(work, metrics_name)
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = MPIRUN + ["-np", str(ranks), exe, "train"] + train + [
        "--steps", str(steps), "--metrics", metrics]
    env = dict(os.environ, OMP_NUM_THREADS=str(max(1, cores // ranks)),
               OPENBLAS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    with open(metrics) as f:
        recs = [json.loads(line) for line in f]
    # The pipeline's measured bubble (idle share of the stages' step) beside
    # the step time, to tell a mispriced bubble from mispriced stage work.
    return ([r["step_ms"] for r in recs],
            [r["pipeline"]["bubble_fraction"] for r in recs if "pipeline" in r])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--profile")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--settle", type=int, default=0,
                    help="more rounds for each rank count's contenders: its three fastest "
                         "layouts after the repeats, and the planner's choice")
    ap.add_argument("--reuse", help="an earlier results JSON: its profile, ep load and the "
                    "measurements of layouts it ran are reused (the model re-predicts them); "
                    "only layouts it lacks are run")
    ap.add_argument("--out", default="plan_validation.json")
    ap.add_argument("--only", help="comma-separated rank counts")
    ap.add_argument("--models", default="dense,moe", help="dense, moe or both")
    a = ap.parse_args()
    exe = os.path.abspath(os.path.join(a.build, "parallm"))
    cores = os.cpu_count()
    load_at_start = os.getloadavg()
    work = tempfile.mkdtemp(prefix="parallm-plan-validation-")
    # --reuse: measured rows by (model, ranks, layout), with the profile and
    # the ep load they were predicted from.
    earlier = {}
    if a.reuse:
        with open(a.reuse) as f:
            prev = json.load(f)
        earlier = {(r["model"], r["ranks"], r["layout"]): r for r in prev["rows"]}
        a.profile = a.profile or prev["profile"]
    profile = a.profile
    if not profile:
        profile = os.path.join(work, "profile.json")
        subprocess.run([exe, "calibrate", "--out", profile], check=True)
    only = {int(x) for x in a.only.split(",")} if a.only else None
    rows = []
    # The experts' load under ep is the routing's, not the machine's: one
    # process measures it (moe.ep_max_load, for every ep size) with the ep
    # layouts' micro-batch, and the MoE plans take it as input.
    load_from, ep_load = None, None
    if "moe" in a.models.split(","):
        load_from = os.path.join(work, "moe_load.jsonl")
        if a.reuse:  # the same per-step loads, as the metrics records carried them
            with open(load_from, "w") as f:
                for i, load in enumerate(prev["moe_ep_load"]):
                    f.write(json.dumps({"step": i, "moe": {"ep_max_load": load}}) + "\n")
        else:
            one = plan(exe, profile, "moe", 1, fixed_items("mb=4"), work)
            measure(exe, one, 1, cores, a.steps, a.warmup, work, "moe_load.jsonl")
        with open(load_from) as f:
            ep_load = [json.loads(line)["moe"]["ep_max_load"] for line in f]
        print(f"moe ep load (busiest rank / mean, per step): {ep_load}", flush=True)
    for model, ranks in sorted({(m, r) for m, r, _ in LAYOUTS}):
        if (only and ranks not in only) or model not in a.models.split(","):
            continue
        specs = [fixed_items(s) for m, r, s in LAYOUTS if (m, r) == (model, ranks)]
        lf = load_from if model == "moe" else None
        choice = plan(exe, profile, model, ranks, [], work, lf)
        cands = [plan(exe, profile, model, ranks, f, work, lf) for f in specs]
        if choice["layout"] not in [c["layout"] for c in cands]:
            cands.append(choice)
        runs = [[] for _ in cands]
        fresh = [i for i, c in enumerate(cands) if (model, ranks, c["layout"]) not in earlier]
        for _ in range(a.repeats):
            for i in fresh:
                runs[i].append(measure(exe, cands[i], ranks, cores, a.steps, a.warmup, work))
        if a.settle and len(fresh) > 2:
            def median_so_far(i):
                return statistics.median(m for ms, _ in runs[i] for m in ms[a.warmup:])
            lead = sorted(fresh, key=median_so_far)[:3]
            pick = next(i for i, c in enumerate(cands) if c["layout"] == choice["layout"])
            lead = sorted(set(lead) | ({pick} if pick in fresh else set()))
            print(f"{model:<5} {ranks}  settling {len(lead)} contenders over {a.settle} more "
                  f"rounds", flush=True)
            for _ in range(a.settle):
                for i in lead:
                    runs[i].append(measure(exe, cands[i], ranks, cores, a.steps, a.warmup, work))
        for c, measured_runs in zip(cands, runs):
            old = earlier.get((model, ranks, c["layout"]))
            if old:
                ms_runs = old["step_ms"]
                bubble = old.get("bubble_fraction")
                measured = old["measured_s"]
            else:
                ms_runs = [ms for ms, _ in measured_runs]
                bubbles = [b for _, bs in measured_runs for b in bs[a.warmup:]]
                bubble = statistics.median(bubbles) if bubbles else None
                all_ms = [m for ms in ms_runs for m in ms[a.warmup:]]
                measured = statistics.median(all_ms) / 1e3
            err = (c["step_s"] - measured) / measured
            row = {"model": model, "ranks": ranks, "layout": c["layout"], "predicted_s": c["step_s"],
                   "measured_s": measured, "error": err, "step_ms": ms_runs,
                   "run_medians_s": [statistics.median(ms[a.warmup:]) / 1e3 for ms in ms_runs],
                   "bubble_fraction": bubble, "reused": old is not None,
                   "planner_choice": c["layout"] == choice["layout"], "breakdown": {
                       k: c[k] for k in ("compute_s", "elementwise_s", "tp_comm_s", "cp_comm_s",
                                         "ep_comm_s", "ep_imbalance_s",
                                         "pp_bubble_s", "pp_p2p_s", "dp_exposed_s",
                                         "optimizer_s", "core_sharing_s", "sync_wait_s",
                                         "syncs")}}
            rows.append(row)
            runs_text = " ".join(f"{x:.2f}" for x in row["run_medians_s"])
            bubble_text = ""
            if row["bubble_fraction"] is not None:
                bubble_text = (f"  bubble predicted {c['pp_bubble_s'] / c['step_s']:.1%} "
                               f"measured {row['bubble_fraction']:.1%}")
            print(f"{model:<5} {ranks}  {c['layout']:<52} predicted {c['step_s']:7.3f} s  measured "
                  f"{measured:7.3f} s  error {100 * err:+6.1f}%  runs {runs_text}{bubble_text}"
                  f"{'  <- planner' if row['planner_choice'] else ''}", flush=True)
    errs = [abs(r["error"]) for r in rows]
    verdicts = planner_verdicts(rows)
    summary = {"cpu": cpu_name(), "cores": cores, "profile": profile, "moe_ep_load": ep_load,
               "steps": a.steps, "warmup": a.warmup, "repeats": a.repeats, "settle": a.settle,
               "reuse": a.reuse,
               "load_average_start": load_at_start, "load_average_end": os.getloadavg(),
               "rows": rows,
               "median_abs_error": statistics.median(errs), "max_abs_error": max(errs),
               "planner": verdicts}
    with open(a.out, "w") as f:
        json.dump(summary, f, indent=1)
    print("\n| model | ranks | layout | predicted s | measured s | error |\n|---|---|---|---|---|---|")
    for r in rows:
        mark = " (planner's choice)" if r["planner_choice"] else ""
        print(f"| {r['model']} | {r['ranks']} | {r['layout']}{mark} | {r['predicted_s']:.2f} | "
              f"{r['measured_s']:.2f} | {100 * r['error']:+.0f}% |")
    print(f"\nload average (1, 5, 15 min) at the start {load_at_start}, at the end "
          f"{summary['load_average_end']}")
    print(f"{len(rows)} layouts on {summary['cpu']} ({cores} cores): median |error| "
          f"{100 * summary['median_abs_error']:.1f}%, max {100 * summary['max_abs_error']:.1f}%")
    for key, v in verdicts.items():
        behind = (f"; {100 * v['behind_second']:.1f}% behind #2, while one layout's runs "
                  f"here differ by up to {100 * v['run_spread']:.0f}%"
                  if v["behind_second"] is not None else "")
        print(f"{key} ranks: planner's choice is #{v['planner_rank']} of {v['layouts']} measured "
              f"(fastest: {v['fastest']}{behind})")


def planner_verdicts(rows):
    """Per (model, ranks): the planner's choice's place among the measured
    layouts, the fastest, and, for a choice behind the best two, how far
    behind the second it measured beside the largest spread between one
    layout's runs in that group (how far apart the same layout lands)."""
    verdicts = {}
    for model, ranks in sorted({(r["model"], r["ranks"]) for r in rows}):
        group = sorted((r for r in rows if (r["model"], r["ranks"]) == (model, ranks)),
                       key=lambda r: r["measured_s"])
        pos = [i for i, r in enumerate(group) if r["planner_choice"]]
        rank = pos[0] + 1 if pos else None
        behind = None
        if rank is not None and rank > 2:
            behind = group[rank - 1]["measured_s"] / group[1]["measured_s"] - 1
        spread = max(max(r["run_medians_s"]) / min(r["run_medians_s"]) - 1 for r in group)
        verdicts[f"{model} {ranks}"] = {"layouts": len(group), "planner_rank": rank,
                                        "fastest": group[0]["layout"], "behind_second": behind,
                                        "run_spread": spread}
    return verdicts


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown cpu"


if __name__ == "__main__":
    main()
