"""`parallm serve` under AddressSanitizer against bad and unkind clients.

parallm_serve_asan is the serve command with the serving code (HTTP
handlers, request parsing, engines, scheduler, block pool) compiled with
ASan (tests/infer/serve/tests.cmake). It serves a tiny GPT-2 while
serve_robustness.py throws its cases at it (malformed JSON, wrong types,
negative max_tokens, 10 MB bodies, unknown fields, disconnects mid-stream
and while waiting, a slow sender and a slow reader); then every KV block
must be free, SIGTERM must stop it, and ASan must have reported no error
and LeakSanitizer no leak allocated by parallm's code (Open MPI's plugins
leak at exit and are unloaded before the report, so their leaks name no
module; a leak is parallm's when the first frame past the C/C++ runtime is
in this binary, at an offset inside its loaded segments: LeakSanitizer has
named an unloaded plugin's frame "parallm_serve_asan+0xbf2cae", an offset
past the binary's end, when the plugin had been mapped near the binary).
Usage: serve_asan_check.py WORKDIR PARALLM_SERVE_ASAN"""
import glob
import os
import re
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tiny_text_model import build  # noqa: E402
import serve_robustness  # noqa: E402

work, binary = sys.argv[1], os.path.abspath(sys.argv[2])
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
asan_prefix = os.path.join(work, "asan")
for f in glob.glob(asan_prefix + "*"):
    os.remove(f)
build(model_dir, n_positions=1024, seed=5)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


ENV = dict(os.environ, OMP_NUM_THREADS="1",
           ASAN_OPTIONS=f"detect_leaks=1:log_path={asan_prefix}:halt_on_error=1",
           LSAN_OPTIONS="exitcode=23")  # a leak exit apart from an ASan error (1)

# The runtime is really in: ASan answers help=1 before the program runs.
probe = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True,
                       env=dict(ENV, ASAN_OPTIONS="help=1"), timeout=60)
check("AddressSanitizer" in probe.stdout + probe.stderr, "the binary runs under ASan")



def lora_cases(port):
    """The LoRA endpoints' parsers (lora_routes.cpp, lora_registry.cpp): every
    bad body or directory is a 4xx and the server keeps answering."""
    import http.client
    import json

    def post(path, raw):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", path, raw, {"Content-Type": "application/json"})
        r = conn.getresponse()
        status, body = r.status, r.read().decode(errors="replace")
        conn.close()
        return status, body

    junk_dir = os.path.join(work, "junk_adapter")
    os.makedirs(junk_dir, exist_ok=True)
    with open(os.path.join(junk_dir, "adapter_config.json"), "w") as f:
        f.write('{"peft_type": "LORA", "r": [1, 2], "target_modules": 7')
    load = "/v1/load_lora_adapter"
    for raw in ["{", "[]", "null", '{"lora_name": 5, "lora_path": "x"}', '{"lora_name": "a"}',
                '{"lora_name": "a\\"b\\n", "lora_path": "x"}', '{"lora_name": "", "lora_path": "x"}',
                json.dumps({"lora_name": "a" * 5000, "lora_path": "x"}),
                json.dumps({"lora_name": "a", "lora_path": os.path.join(work, "nope")}),
                json.dumps({"lora_name": "a", "lora_path": model_dir}),
                json.dumps({"lora_name": "a", "lora_path": junk_dir}),
                json.dumps({"lora_name": "tiny", "lora_path": junk_dir})]:
        status, body = post(load, raw)
        check(status == 400 and '"error"' in body, f"load_lora_adapter {raw[:60]!r} is 400 ({status})")
    status, _ = post("/v1/unload_lora_adapter", '{"lora_name": "a"}')
    check(status == 404, f"unloading an unknown adapter is 404 ({status})")
    status, _ = post("/v1/unload_lora_adapter", "{]")
    check(status == 400, f"a malformed unload body is 400 ({status})")
    status, _ = post("/v1/completions", '{"model": "a", "prompt": "hi", "max_tokens": 2}')
    check(status == 404, f"an unknown adapter as model is 404 ({status})")
    status, _ = post("/v1/completions", '{"model": "tiny", "prompt": "hi", "max_tokens": 2}')
    check(status == 200, f"the server still answers after the LoRA cases ({status})")

    # A real adapter (peft, on c_attn and c_fc), unloaded while a request of
    # it streams: the request ends whole (it holds the factors), later ones 404.
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2LMHeadModel
    torch.manual_seed(1)
    pm = get_peft_model(GPT2LMHeadModel.from_pretrained(model_dir),
                        LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "c_fc"]))
    for n, p in pm.named_parameters():
        if "lora_B" in n:
            torch.nn.init.normal_(p, std=0.3)
    adapter_dir = os.path.join(work, "adapter")
    pm.save_pretrained(adapter_dir, safe_serialization=True)
    status, body = post(load, json.dumps({"lora_name": "ad", "lora_path": adapter_dir}))
    check(status == 200, f"a peft adapter loads ({status} {body})")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/completions", json.dumps(
        {"model": "ad", "prompt": "hello", "max_tokens": 200, "stream": True,
         "temperature": 0}), {"Content-Type": "application/json"})
    stream = conn.getresponse()
    first = stream.readline()
    status, _ = post("/v1/unload_lora_adapter", '{"lora_name": "ad"}')
    check(status == 200, f"unloaded while its request streams ({status})")
    rest = stream.read().decode(errors="replace")
    conn.close()
    check(first.startswith(b"data: ") and rest.rstrip().endswith("data: [DONE]"),
          "the streaming request of the unloaded adapter ends whole")
    status, _ = post("/v1/completions", '{"model": "ad", "prompt": "hi", "max_tokens": 2}')
    check(status == 404, f"after the unload its name is a 404 ({status})")


t0 = time.time()
server = subprocess.Popen([binary, "serve", "--model", model_dir, "--port", "0",
                           "--served-model-name", "tiny", "--max-running", "4",
                           "--max-waiting", "16", "--shutdown-grace", "10", "--enable-lora",
                           "--max-loras", "2"],
                          stdout=subprocess.PIPE, text=True, env=ENV)
try:
    line = server.stdout.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    assert m, f"no listening line: {line!r}"
    port = int(m.group(1))
    print(line.strip(), flush=True)
    serve_robustness.run(port, check, "tiny", context=1024, queue_full_n=40)
    lora_cases(port)
    check(serve_robustness.pool_is_whole(port), "every KV block is free after them")
    server.send_signal(signal.SIGTERM)
    code = server.wait(timeout=60)
finally:
    if server.poll() is None:
        server.kill()
        code = server.wait()
print(f"server ran {time.time() - t0:.1f} s, exit code {code}", flush=True)

reports = "".join(open(f).read() for f in glob.glob(asan_prefix + "*"))
errors = re.findall(r"ERROR: AddressSanitizer: [^\n]*", reports)
check(not errors, f"no AddressSanitizer error ({errors[:3]})")
RUNTIME = re.compile(r"libstdc\+\+|libgcc_s|libc\.so|libasan|libsanitizer/")
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def loaded_extent(path):
    """The end of an ELF64 file's PT_LOAD segments, as an offset from its
    load base: the largest offset a frame in it can have."""
    with open(path, "rb") as f:
        head = f.read(64)
        assert head[:5] == b"\x7fELF\x02", f"{path}: not an ELF64 file"
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    end = 0
    for i in range(phnum):
        kind, = struct.unpack_from("<I", table, i * phentsize)
        vaddr, = struct.unpack_from("<Q", table, i * phentsize + 0x10)
        memsz, = struct.unpack_from("<Q", table, i * phentsize + 0x28)
        if kind == 1:  # PT_LOAD
            end = max(end, vaddr + memsz)
    return end


BINARY_END = loaded_extent(binary)


def ours(block):
    """Whether a leak was allocated by this binary's code: walking out from
    the allocator, past the C/C++ runtime, the first frame that names a
    place is in the binary (its module, parallm's sources or the headers
    compiled into it) rather than in another library or an unloaded one."""
    for frame in re.findall(r"#\d+ 0x[0-9a-f]+ (.*)", block):
        if RUNTIME.search(frame):
            continue
        if "<unknown module>" in frame or re.search(r"\(/\S+\.so[.\d]*\+", frame):
            return False
        inside = re.search(r"\(" + re.escape(binary) + r"\+0x([0-9a-f]+)\)", frame)
        if inside and int(inside.group(1), 16) >= BINARY_END:
            return False  # an unloaded module's frame, misnamed (see the top)
        # Sources may be named relative to the build ("../src/infer/...").
        if binary in frame or SOURCE in frame or "/usr/include/" in frame or \
                re.search(r"(?:^|[\s/])src/\w+/", frame):
            return True
    return False


leaks = re.split(r"\n(?=(?:Direct|Indirect) leak)", reports)[1:]
mine = [b for b in leaks if ours(b)]
print(f"LeakSanitizer: {len(leaks)} leak stacks, {len(mine)} from parallm", flush=True)
for b in mine[:5]:
    print(b[:2000])
check(not mine, "no leak allocated by parallm's code")
# LeakSanitizer exits 23 when it found leaks (here: Open MPI's).
check(code == 0 or (code == 23 and not mine and not errors), f"SIGTERM: exit code {code}")
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
