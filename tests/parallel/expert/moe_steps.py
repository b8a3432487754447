"""Step-by-step comparison of MoE training metrics for the expert-parallel
shell tests: a layout's JSONL records against the reference run's, losses
and gradient norms within 1e-5 relative, per-expert load and dropped
fraction equal. Imported with PYTHONPATH=$ep_tests_dir (ep_script_setup.sh)."""
import json


def read(path):
    """The records of a metrics file, by step."""
    return {r["step"]: r for r in map(json.loads, open(path))}


def compare(name, ref, steps):
    """Compares the steps `steps` of metrics file `name` with `ref` (records
    by step); prints a line per value and returns the number that differ."""
    got = read(name)
    assert sorted(got) == steps, (name, sorted(got))
    bad = 0
    for s in steps:
        for k in ("loss", "grad_norm"):
            a, b = got[s][k], ref[s][k]
            ok = abs(a - b) <= 1e-5 * abs(b)
            bad += not ok
            print(f"{name} step {s + 1} {k}: {a:.8f} vs {b:.8f} {'ok' if ok else 'DIFFERENT'}")
        for k in ("expert_load", "dropped_fraction"):
            same = got[s]["moe"][k] == ref[s]["moe"][k]
            bad += not same
            print(f"{name} step {s + 1} {k}: {got[s]['moe'][k]} {'ok' if same else 'DIFFERENT'}")
    return bad
