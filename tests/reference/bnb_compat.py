"""Lets bitsandbytes 0.50.2 import on Debian's torch 1.13 without changing it.

bnb 0.50 registers its kernels with torch.library APIs of torch >= 2.4
(define(qualname, schema), register_kernel, register_fake) and probes a few
attributes torch 1.13 lacks (torch.compiler, torch.backends.cpu,
torch._C._has_xpu). This module supplies those names on top of torch 1.13's
own torch.library.Library (DEF and IMPL), so bnb's unmodified code runs:
its torch "default" backend (quantize_4bit, the reference NF4 algorithm)
and its compiled CPU library (dequantize_4bit, quantize_blockwise). Fake
(meta) kernels are only for torch.compile and are not registered.
Every registered kernel is also kept in KERNELS[(qualname, device)], so a
test can call one backend's implementation directly.
Import it before bitsandbytes: `import bnb_compat; import bitsandbytes`.
"""
import inspect
import logging
import types

import torch
import torch.library as tl

# On a CPU with AVX512-BF16, bnb's CPU backend first tries to fetch an
# optional gemm_4bit kernel from the Hugging Face hub (the `kernels` package,
# not installed: the hub is not one of our registries) and logs a warning
# when it cannot, then uses its own compiled library, which is the code the
# tests compare against. The fallback is the intended path, so its warning is
# not shown; bnb's errors still are.
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)

KERNELS = {}
_libs = {}
_DISPATCH_KEY = {"cpu": "CPU", "default": "CompositeExplicitAutograd"}


def _lib(ns, kind):
    if (ns, kind) not in _libs:
        _libs[(ns, kind)] = tl.Library(ns, kind)
    return _libs[(ns, kind)]


def _define(qualname, schema, **_):
    ns, name = qualname.split("::")
    _lib(ns, "DEF").define(name + schema)


def _register_fake(qualname, fn=None, **_):
    return (lambda f: f) if fn is None else fn


def _register_kernel(qualname, device, fn=None, **_):
    ns, name = qualname.split("::")

    def register(f):
        KERNELS[(qualname, device)] = f
        if device in _DISPATCH_KEY:  # cuda, xpu, ... do not exist here
            _lib(ns, "IMPL").impl(name, f, _DISPATCH_KEY[device])
        return f

    return register if fn is None else register(fn)


def _install():
    # torch 1.13's torch.library.define(lib, schema) is a different function.
    if not hasattr(tl, "register_kernel"):
        if "lib" in inspect.signature(tl.define).parameters:
            tl.define = _define
        tl.register_kernel = _register_kernel
        tl.register_fake = _register_fake
    if not hasattr(torch._C, "_has_xpu"):
        torch._C._has_xpu = False
    if not hasattr(torch, "compiler"):
        torch.compiler = types.SimpleNamespace(
            is_compiling=lambda: False,
            disable=lambda fn=None, **_: fn if fn is not None else (lambda f: f))
    if not hasattr(torch.backends, "cpu"):
        torch.backends.cpu = types.SimpleNamespace(get_cpu_capability=lambda: "DEFAULT")


_install()
