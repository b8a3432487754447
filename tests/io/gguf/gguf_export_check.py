"""`parallm export --gguf` against the `gguf` package and llama.cpp's
conventions (gguf_from_hf.py, the tests' converter): a tiny GPT-2 (fused
qkv, Conv1D transposed, tied head) and a tiny LLaMA (GQA, q/k permuted,
untied head), each exported f32 and --quantize q8_0:
  - the file reads with gguf.GGUFReader; its metadata and tensor names and
    shapes are those of gguf_from_hf's file; f32 tensors equal bit for bit;
    Q8_0 tensors (the linear weights, the head or a tied token table) equal
    gguf.quants.quantize of the same values;
  - `parallm generate --model out.gguf` gives the HF directory's greedy tokens
    (f32; q8_0 runs).
Usage: gguf_export_check.py WORK_DIR PARALLM"""
import json
import os
import shutil
import subprocess
import sys

import gguf
import numpy as np
import torch

here = os.path.dirname(__file__)
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "infer"))
from gguf_from_hf import write_gguf  # noqa: E402
from script_checks import check, failed, run  # noqa: E402,F401
from tiny_text_model import build  # noqa: E402

work, parallm = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)




def greedy(model):
    out = run([parallm, "generate", "--model", model, "--prompt", "hello world",
               "--prompt", "the quick brown", "--temperature", "0", "--max-new-tokens", "12",
               "--json", "--threads", "1"])
    return [json.loads(l)["tokens"] for l in out.splitlines() if l.startswith("{")]


def compare(name, hf_dir, model, arch, **kw):
    ref_path = os.path.join(work, name + "_ref.gguf")
    write_gguf(ref_path, model, arch, **kw)
    ref = {t.name: t for t in gguf.GGUFReader(ref_path).tensors}
    want = greedy(hf_dir)
    for q in ("", "q8_0"):
        out = os.path.join(work, f"{name}{'_' + q if q else ''}.gguf")
        run([parallm, "export", "--model", hf_dir, "--gguf", out] + (["--quantize", q] if q else []))
        r = gguf.GGUFReader(out)
        tag = f"{name} {q or 'f32'}"
        check(sorted(t.name for t in r.tensors) == sorted(ref), f"{tag}: tensor names")
        for t in r.tensors:
            rt = ref[t.name]
            same_shape = list(t.shape) == list(rt.shape)
            want_t = gguf.GGMLQuantizationType.F32
            if q and t.name.endswith(("attn_q.weight", "attn_k.weight", "attn_v.weight",
                                      "attn_qkv.weight", "attn_output.weight", "ffn_up.weight",
                                      "ffn_gate.weight", "ffn_down.weight", "output.weight")) \
                    or (q and arch == "gpt2" and t.name == "token_embd.weight"):  # the tied head
                want_t = gguf.GGMLQuantizationType.Q8_0
            ok = same_shape and t.tensor_type == want_t
            if ok and want_t == gguf.GGMLQuantizationType.F32:
                ok = np.array_equal(np.asarray(t.data), np.asarray(rt.data))
            elif ok:
                vals = np.asarray(rt.data, dtype=np.float32).reshape(-1, int(rt.shape[0]))
                ok = np.array_equal(np.asarray(t.data).reshape(-1), gguf.quants.quantize(
                    vals, want_t).reshape(-1))
            if not ok:
                check(False, f"{tag}: {t.name} {t.tensor_type.name} {list(t.shape)} vs "
                             f"{rt.tensor_type.name} {list(rt.shape)}")
        check(not [f for f in failed if f.startswith(tag)], f"{tag}: every tensor as the converter's")
        for k in ("general.architecture", f"{arch}.block_count", f"{arch}.attention.head_count_kv",
                  "tokenizer.ggml.model", "tokenizer.ggml.pre"):
            f = r.fields.get(k)
            check(f is not None, f"{tag}: metadata {k} = {f.contents() if f else None}")
        got = greedy(out)
        check(got == want if not q else len(got) == len(want),
              f"{tag}: greedy tokens from the .gguf {got} (HF {want})")
        if os.path.exists(out + ".tmp"):
            check(False, f"{tag}: a temporary file is left")


def gpt2():
    d = os.path.join(work, "gpt2")
    model, _ = build(d)
    tj = json.load(open(os.path.join(d, "tokenizer.json")))
    compare("gpt2", d, model, "gpt2", gpt2_tokenizer=tj)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    d = os.path.join(work, "llama")
    _, fast = build(d)  # its tokenizer; the model is replaced below
    os.remove(os.path.join(d, "model.safetensors"))
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, vocab_size=len(fast),
                                         max_position_embeddings=128, tie_word_embeddings=False,
                                         bos_token_id=0, eos_token_id=0))
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3)
    model.eval().save_pretrained(d, safe_serialization=True)
    tj = json.load(open(os.path.join(d, "tokenizer.json")))
    compare("llama", d, model, "llama", gpt2_tokenizer=tj)


gpt2()
llama()
# A bad preset writes nothing.
bad = os.path.join(work, "bad.gguf")
r = subprocess.run([parallm, "export", "--model", os.path.join(work, "gpt2"), "--gguf", bad,
                    "--quantize", "q5_1"], capture_output=True, text=True)
check(r.returncode != 0 and not os.path.exists(bad), f"bad preset refused: {r.stderr.strip()}")
if failed:
    print(f"{len(failed)} checks failed")
    sys.exit(1)
print("all checks passed")
