"""PyTorch's scaled_dot_product_attention (flash backend, bf16, causal) on the
shapes of bench/gpu/attention_bench.cpp, timed the same way (CUDA events,
3 warm-up runs, median of 20) and printed with the same JSON fields."""
import json

import torch
import torch.nn.functional as F

SHAPES = [(16, 12, 1024, 64), (16, 12, 4096, 64), (16, 8, 1024, 128)]


def median_ms(fn, reps=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        ctx = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:  # older torch
        ctx = lambda: torch.backends.cuda.sdp_kernel(
            enable_flash=True, enable_math=False, enable_mem_efficient=False)
    for B, H, T, D in SHAPES:
        mk = lambda: torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16)
        q, k, v, dout = mk().requires_grad_(), mk().requires_grad_(), mk().requires_grad_(), mk()
        with ctx():
            def fwd():
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=True)

            def fwd_bwd():
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                out.backward(dout)

            f_ms, fb_ms = median_ms(fwd), median_ms(fwd_bwd)
        flops = 2.0 * 2.0 * B * H * T * T * D / 2.0
        for name, ms, fl in (("fwd", f_ms, flops), ("fwd_bwd", fb_ms, 3.5 * flops)):
            print(json.dumps({"impl": "torch_sdpa", "pass": name, "B": B, "H": H, "T": T, "D": D,
                              "dtype": "bf16", "causal": True, "ms": round(ms, 4),
                              "tflops": round(fl / (ms * 1e-3) / 1e12, 2)}), flush=True)


if __name__ == "__main__":
    main()
