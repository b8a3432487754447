"""parallm's FP8 casts against ml_dtypes (float8_e4m3fn, float8_e5m2), bit for bit.

usage: fp8_compare.py FP8_DUMP WORKDIR

Inputs: every f32 whose top 20 bits take any value, with the low 12 bits
at 0, 1, 0x7FF, 0x800 (exact midpoints of the coarser fp8 grid land here),
0x801 and 0xFFF, plus 2^20 random bit patterns: normals, subnormals, zeros,
overflow, infinities and NaNs of both signs. ml_dtypes casts overflow to
NaN (E4M3) or infinity (E5M2); the saturating casts must equal ml_dtypes'
cast of the value clipped to the largest finite one. NaN codes are compared
as "NaN with this sign" (ml_dtypes keeps the input's sign).
"""
import os
import subprocess
import sys

import numpy as np

try:
    import ml_dtypes
except ImportError:
    sys.exit("fp8_compare: the ml_dtypes package is missing (scripts/install-deps.sh installs it)")

dump, work = sys.argv[1], sys.argv[2]
hi = np.arange(1 << 20, dtype=np.uint32) << 12
lows = [0, 1, 0x7FF, 0x800, 0x801, 0xFFF]
bits = np.concatenate([hi | np.uint32(lo) for lo in lows] +
                      [np.random.default_rng(7).integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)])
x = bits.view(np.float32)
x.tofile(os.path.join(work, "in.f32"))
subprocess.run([dump, os.path.join(work, "in.f32"), work], check=True)

failures = 0
for name, t in (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
    fmax = float(ml_dtypes.finfo(t).max)
    codes = np.arange(256, dtype=np.uint8)
    want_dec = codes.view(t).astype(np.float32)
    got_dec = np.fromfile(os.path.join(work, name + ".f32"), dtype=np.float32)
    same = (want_dec.view(np.uint32) == got_dec.view(np.uint32)) | (np.isnan(want_dec) & np.isnan(got_dec))
    if not same.all():
        bad = np.nonzero(~same)[0]
        print(f"{name}: {bad.size} codes decode differently, e.g. {bad[0]:#04x}: "
              f"ml_dtypes {want_dec[bad[0]]} parallm {got_dec[bad[0]]}")
        failures += 1
    with np.errstate(invalid="ignore", over="ignore"):
        for suffix, xs in (("", x), ("_sat", np.where(np.isnan(x), x, np.clip(x, -fmax, fmax)))):
            want = xs.astype(t).view(np.uint8)
            got = np.fromfile(os.path.join(work, name + suffix + ".u8"), dtype=np.uint8)
            nan_w = np.isnan(want.view(t).astype(np.float32))
            nan_g = np.isnan(got.view(t).astype(np.float32))
            ok = np.where(nan_w, nan_g & ((want & 0x80) == (got & 0x80)), want == got)
            n_bad = int((~ok).sum())
            kinds = {"nan": int(np.isnan(xs).sum()), "inf": int(np.isinf(xs).sum()),
                     "overflow": int((np.abs(xs) > fmax).sum() - np.isinf(xs).sum()),
                     "subnormal": int(((np.abs(xs) < float(ml_dtypes.finfo(t).smallest_normal)) & (xs != 0)).sum())}
            print(f"{name}{suffix}: {xs.size} values ({kinds}), {n_bad} differ")
            if n_bad:
                i = np.nonzero(~ok)[0][0]
                print(f"  e.g. {xs[i]!r} (bits {bits[i]:#010x}): ml_dtypes {want[i]:#04x} parallm {got[i]:#04x}")
                failures += 1
sys.exit(1 if failures else 0)
