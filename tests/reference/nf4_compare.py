"""parallm's NF4 against bitsandbytes itself (0.50.2, on Debian's torch 1.13
through bnb_compat): quant_type nf4, blocksize 64, compress_statistics off
and on, on fixed tensors (normal, odd length with a short last block, a zero
block and outliers, values exactly on the codebook's midpoints, and one with
six second-level blocks of 256, the last short).

Held exactly (bit for bit): the packed bytes (nibble order), the fp32
absmax, the dequantised weights; with double quantisation the 8-bit absmax
codes, the second-level absmax and the dequantised weights given bnb's
offset. The offset itself is torch's f32 mean (a sum order of torch's CPU
kernel), parallm's is the exactly rounded mean: they may differ by one f32
ulp, so the offset is held within one ulp and the end-to-end dequantised
weights within 2 ulp of their scale.

bnb runs its 8-bit blockwise quantiser on CPU through a 65536-entry lookup
table (csrc/cpu_ops.cpp), an approximation of the nearest code that its
torch and CUDA kernels compute exactly; parallm computes the nearest code.
The second stage is therefore held exactly to bnb's torch kernel, and to the
CPU kernel's codes only where they agree (any difference must be one code
step, with parallm's the nearer).

bitsandbytes lives off Python's path (scripts/install-deps.sh says why):
BNB_DIR is the directory pip installed it into.

usage: nf4_compare.py NF4_DUMP WORKDIR [BNB_DIR]
"""
import os
import subprocess
import sys

import numpy as np

BNB_DIR = sys.argv[3] if len(sys.argv) > 3 else "/opt/parallm-py/bitsandbytes-0.50.2"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BNB_DIR)
import bnb_compat  # noqa: E402  (before bitsandbytes)
import torch  # noqa: E402
import bitsandbytes  # noqa: E402
import bitsandbytes.functional as F  # noqa: E402


def cases():
    g = torch.Generator().manual_seed(1234)
    out = {"normal": torch.randn(64, 128, generator=g),
           "short_last_block": 3.0 * torch.randn(3, 102, generator=g),
           "odd": torch.randn(3, 101, generator=g)}
    b = torch.randn(16, 64, generator=g)
    b[3] = 0.0
    b[5, 7], b[9, 0] = 50.0, -50.0
    out["zero_block_outliers"] = b
    code = F.get_4bit_type("nf4", device="cpu")
    mid = ((code[:-1] + code[1:]) / 2).tolist()  # f32 midpoints, exactly representable
    up = [float(np.nextafter(np.float32(m), np.float32(2))) for m in mid]
    down = [float(np.nextafter(np.float32(m), np.float32(-2))) for m in mid]
    ties = [1.0, -1.0, 0.0, 0.5] + mid + [-m for m in mid] + up + down
    assert len(ties) == 64, len(ties)
    # Two blocks (scales 1 and 0.5, both exact): with one block double
    # quantisation would centre every absmax to zero, a degenerate case.
    t = torch.tensor(ties, dtype=torch.float32)
    out["midpoint_ties"] = torch.cat([t, 0.5 * t])
    out["six_dq_blocks"] = 0.02 * torch.randn(257, 320, generator=g)
    return out


def read(path, dtype):
    return np.fromfile(path, dtype=dtype)


def bits_equal(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def main():
    dump, work = sys.argv[1], sys.argv[2]
    assert torch.__file__.startswith("/usr/lib/python3/dist-packages/torch/"), \
        f"torch {torch.__version__} at {torch.__file__} is not Debian's"
    assert bitsandbytes.__version__ == "0.50.2", bitsandbytes.__file__
    print(f"bitsandbytes {bitsandbytes.__version__} on torch {torch.__version__}")
    default_qb = bnb_compat.KERNELS[("bitsandbytes::quantize_blockwise", "default")]
    dyn = F.create_dynamic_map()
    failures = []

    def check(ok, what):
        print(("  ok    " if ok else "  FAIL  ") + what)
        if not ok:
            failures.append(what)

    for name, x in cases().items():
        n = x.numel()
        for dq in (False, True):
            tag = f"{name} {tuple(x.shape)} double_quant={dq}"
            print(tag)
            out = os.path.join(work, f"{name}_{int(dq)}")
            os.makedirs(out, exist_ok=True)
            inp = os.path.join(out, "in.f32")
            x.numpy().astype(np.float32).tofile(inp)
            q, st = F.quantize_4bit(x, blocksize=64, quant_type="nf4", compress_statistics=dq)
            args = [dump, inp, str(n), "1" if dq else "0", out]
            if dq:
                off = os.path.join(out, "bnb_offset.f32")
                np.array([st.offset.item()], np.float32).tofile(off)
                args.append(off)
            subprocess.run(args, check=True)
            check(np.array_equal(read(f"{out}/packed.u8", np.uint8), q.numpy().reshape(-1)),
                  "packed nibbles (first element high) equal bnb's bytes")
            if dq:
                # The second stage from bnb's offset, by bnb's exact (torch) kernel.
                absmax = F.quantize_4bit(x, blocksize=64, quant_type="nf4")[1].absmax
                ref_q, ref_a2 = default_qb(absmax - st.offset, dyn, 256)
            if n % 2 == 1:
                # bnb dequantises an odd length in its torch fallback, which indexes
                # with int32 (torch >= 2): here the stored state is what is compared.
                if not dq:
                    check(bits_equal(read(f"{out}/absmax.f32", np.float32), st.absmax.numpy()),
                          "fp32 absmax equal (odd length: bnb cannot dequantise it on torch 1.13)")
                else:
                    check(np.array_equal(read(f"{out}/qabsmax_at_offset.u8", np.uint8),
                                         ref_q.numpy()), "8-bit absmax codes equal (odd length)")
                continue
            deq = F.dequantize_4bit(q, st)
            if not dq:
                check(bits_equal(read(f"{out}/absmax.f32", np.float32), st.absmax.numpy()),
                      "fp32 absmax equal")
                check(bits_equal(read(f"{out}/dequant.f32", np.float32),
                                 deq.numpy().reshape(-1)), "dequantised weights bit-equal")
                continue
            # Double quantisation. First: the offset (torch's f32 mean).
            mine_off = np.float32(read(f"{out}/offset.f32", np.float32)[0])
            bnb_off = np.float32(st.offset.item())
            check(abs(mine_off - bnb_off) <= np.spacing(bnb_off),
                  f"offset {mine_off!r} within one ulp of bnb's {bnb_off!r}")
            my_q = read(f"{out}/qabsmax_at_offset.u8", np.uint8)
            check(np.array_equal(my_q, ref_q.numpy()),
                  "8-bit absmax codes equal bnb's torch kernel's")
            check(bits_equal(read(f"{out}/absmax2_at_offset.f32", np.float32), ref_a2.numpy()),
                  "second-level fp32 absmax equal")
            # bnb's CPU kernel (a lookup table): where its codes differ, by one step and farther.
            cpu_q = st.absmax.numpy()
            diff = np.nonzero(cpu_q != my_q)[0]
            centred = (absmax - st.offset).numpy()
            scale = 1.0 / ref_a2.numpy()[diff // 256]
            s = centred[diff] * scale
            nearer = np.abs(dyn.numpy()[my_q[diff]] - s) <= np.abs(dyn.numpy()[cpu_q[diff]] - s)
            adjacent = np.abs(cpu_q[diff].astype(int) - my_q[diff].astype(int)) == 1
            check(bool(np.all(nearer & adjacent)),
                  f"bnb CPU lookup-table codes: {len(diff)} of {len(cpu_q)} differ, each by one "
                  f"step with parallm's the nearer")
            # Weights rebuilt with bnb's (torch-kernel) state: bit-equal.
            st.absmax, st.state2.absmax = ref_q, ref_a2
            ref_deq = F.dequantize_4bit(q, st).numpy().reshape(-1)
            check(bits_equal(read(f"{out}/dequant_at_offset.f32", np.float32), ref_deq),
                  "dequantised weights bit-equal given bnb's offset")
            # End to end (parallm's own offset): a one-ulp offset difference moves
            # each block scale by at most ulp(offset) + ulp(scale) (its rounding),
            # and a weight code * scale by |code| <= 1 times that plus its rounding.
            mine = read(f"{out}/dequant.f32", np.float32)
            scale = np.repeat(F.dequantize_blockwise(ref_q, st.state2).numpy() + bnb_off, 64)[:n]
            bound = np.spacing(bnb_off) + 2 * np.spacing(np.abs(scale)) + np.spacing(np.abs(ref_deq))
            worst = np.max(np.abs(mine - ref_deq) / bound)
            check(worst <= 1.0, "dequantised weights end to end within ulp(offset) + 2 ulp(scale)"
                  f" + ulp(weight) (worst {worst:.2f} of that bound)")
            bits = 8.0 * (q.numel() + ref_q.numel() + 4 * ref_a2.numel()) / n
            print(f"  bnb stores {bits:.4f} bits per weight (packed + 8-bit absmax + fp32 absmax2)")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("all NF4 checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
