"""GGUF reference checks against the `gguf` package (llama.cpp's gguf-py).
Usage: gguf_reference.py CASE WORK_DIR GGUF_DUMP PARALLM [LAUNCHER...]
  blocks: every supported tensor type dequantised by parallm bit-equal to
          gguf.quants.dequantize (Q8_0 / Q4_0 blocks from gguf.quants.quantize,
          Q4_K / Q6_K random valid bytes, F16, BF16); parallm's Q8_0 / Q4_0
          quantisation bit-equal to gguf.quants.quantize.
  gpt2, llama: a tiny model saved by transformers and written to GGUF f32
          (gguf_from_hf.py): `parallm generate --temperature 0` from the .gguf
          gives the tokens and log-probabilities it gives from the HF
          directory (plain and --chat for gpt2), and the file's tokenizer
          encodes strings as the directory's tokenizer.json does.
  llama_q8: the LLaMA written with Q8_0 linear weights: every loaded
          parameter (this rank's tp shard under LAUNCHER) equals the HF
          tensor through gguf.quants' quantise + dequantise (the q/k
          permutation undone), quantised ones read back from their blocks."""
import json
import os
import shutil
import sys

import gguf
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "infer"))
from gguf_from_hf import write_gguf  # noqa: E402
from script_checks import check, failed, run  # noqa: E402,F401

case, work, dump, parallm = sys.argv[1:5]
launcher = sys.argv[5:]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)




def blocks():
    rng = np.random.default_rng(0)
    path = os.path.join(work, "blocks.gguf")
    w = gguf.GGUFWriter(path, "test")
    ref = {}
    T = gguf.GGMLQuantizationType
    for t in (T.Q8_0, T.Q4_0, T.F16, T.BF16):
        x = (rng.standard_normal((8, 256)) * rng.uniform(0.01, 10, (8, 1))).astype(np.float32)
        x[0, :32] = 0  # an all-zero block
        b = gguf.quants.quantize(x, t)
        w.add_tensor(t.name, b, raw_dtype=t)
        ref[t.name] = gguf.quants.dequantize(b, t)
        if t in (T.Q8_0, T.Q4_0):
            x.tofile(os.path.join(work, t.name + ".in.f32"))
            run([dump, "quantize", t.name, os.path.join(work, t.name + ".in.f32"),
                 os.path.join(work, t.name + ".q")])
            got = np.fromfile(os.path.join(work, t.name + ".q"), dtype=np.uint8)
            check(np.array_equal(got, b.reshape(-1)), f"quantize {t.name}: bit-equal to gguf.quants")
    for t, d_at in ((T.Q4_K, (0, 2)), (T.Q6_K, (208,))):
        bs = gguf.GGML_QUANT_SIZES[t][1]
        b = rng.integers(0, 256, (6, 4 * bs), dtype=np.uint8)
        for blk in range(4):  # finite fp16 super-block scales
            for at in d_at:
                s = (rng.standard_normal(6) * 0.05).astype(np.float16).view(np.uint8).reshape(6, 2)
                b[:, blk * bs + at: blk * bs + at + 2] = s
        w.add_tensor(t.name, b, raw_dtype=t)
        ref[t.name] = gguf.quants.dequantize(b, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    out = os.path.join(work, "deq")
    run([dump, "dequant", path, out])
    for name, r in ref.items():
        got = np.fromfile(os.path.join(out, name + ".f32"), dtype=np.float32)
        want = r.astype(np.float32).reshape(-1)
        check(got.view(np.uint32).tolist() == want.view(np.uint32).tolist(),
              f"dequantize {name}: {got.size} values bit-equal to gguf.quants.dequantize")


def generate(model, extra):
    out = run([parallm, "generate", "--model", model, "--max-new-tokens", "12",
               "--temperature", "0", "--logprobs", "1"] + extra)
    return [json.loads(l) for l in out.splitlines()]


def compare_generate(hf_dir, gguf_path, prompts, extra=()):
    args = sum((["--prompt", p] for p in prompts), []) + list(extra)
    a, b = generate(hf_dir, args), generate(gguf_path, args)
    same = [x["tokens"] for x in a] == [x["tokens"] for x in b]
    diff = max(abs(s["logprob"] - t["logprob"]) for x, y in zip(a, b)
               for s, t in zip(x["logprobs"], y["logprobs"]))
    check(same and diff == 0.0, f"generate {' '.join(extra)}: {len(prompts)} prompts, same tokens "
          f"from the .gguf as from the HF directory, max |logprob diff| {diff:.1e}")


def compare_tokenizer(gguf_path, fast, texts):
    got = [json.loads(l) for l in run([dump, "tokenize", gguf_path] + texts).splitlines()]
    want = [fast(t).input_ids for t in texts]
    check(got == want, f"tokenizer: {len(texts)} strings encoded as tokenizer.json encodes them")
    if got != want:
        print(got, want)


TEXTS = ["hello world", " the quick  brown fox\n\njumps", "你好世界 ok", "lazy dog. 🦊", ""]


def gpt2():
    from tiny_text_model import CHAT_TEMPLATE, build
    d = os.path.join(work, "hf")
    model, fast = build(d)
    tj = json.load(open(os.path.join(d, "tokenizer.json")))
    g = os.path.join(work, "tiny.gguf")
    write_gguf(g, model, "gpt2", gpt2_tokenizer=tj, chat_template=CHAT_TEMPLATE, eos_id=0)
    compare_generate(d, g, ["hello world", "the quick brown 你好"])
    compare_generate(d, g, ["hello fox"], ["--chat", "--system", "be brief"])
    compare_tokenizer(g, fast, TEXTS)


def spm_vocab():
    """A SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte
    pieces, then BPE pieces (▁ for spaces) scored by merge order."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Metaspace()
    t.train_from_iterator(["hello world, the quick brown fox jumps over the lazy dog."] * 50,
                          trainers.BpeTrainer(vocab_size=120))
    pieces = [p for p, _ in sorted(t.get_vocab().items(), key=lambda kv: kv[1])]
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)] + pieces
    T = gguf.TokenType
    types = [T.UNKNOWN, T.CONTROL, T.CONTROL] + [T.BYTE] * 256 + [T.NORMAL] * len(pieces)
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    return toks, scores, types


def hf_llama_tokenizer(spm, d):
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers
    from transformers import LlamaTokenizerFast
    from transformers.convert_slow_tokenizer import generate_merges
    toks, scores, _ = spm
    vocab = {t: i for i, t in enumerate(toks)}
    merges = generate_merges(vocab, list(zip(toks, scores)))
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in toks[:3]])
    fast = LlamaTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                              unk_token="<unk>", add_bos_token=True, add_eos_token=False)
    fast.save_pretrained(d)
    return fast


def llama_model(vocab):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    m = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2,
                                     vocab_size=vocab, max_position_embeddings=128,
                                     tie_word_embeddings=False, bos_token_id=1, eos_token_id=2))
    for p in m.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return m.eval()


def llama():
    spm = spm_vocab()
    d = os.path.join(work, "hf")
    model = llama_model(len(spm[0]))
    model.save_pretrained(d, safe_serialization=True)
    fast = hf_llama_tokenizer(spm, d)
    g = os.path.join(work, "tiny.gguf")
    write_gguf(g, model, "llama", spm=spm)
    compare_generate(d, g, ["hello world", "the lazy dog jumps over 你好"])
    compare_tokenizer(g, fast, TEXTS)


def llama_q8():
    spm = spm_vocab()
    model = llama_model(len(spm[0]))
    g = os.path.join(work, "tiny_q8.gguf")
    write_gguf(g, model, "llama", spm=spm, qtype="Q8_0")
    ranks = int(launcher[launcher.index("-np") + 1]) if "-np" in launcher else 1
    out = os.path.join(work, "params")
    run(launcher + [dump, "params", g, out, str(ranks)])
    names = {"embed.weight": "model.embed_tokens.weight", "final_norm.weight": "model.norm.weight",
             "lm_head.weight": "lm_head.weight"}
    inner = {"norm1": "input_layernorm", "attn.q": "self_attn.q_proj", "attn.k": "self_attn.k_proj",
             "attn.v": "self_attn.v_proj", "attn.o": "self_attn.o_proj",
             "norm2": "post_attention_layernorm", "mlp.gate": "mlp.gate_proj",
             "mlp.up": "mlp.up_proj", "mlp.down": "mlp.down_proj"}
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    worst, n = 0, 0
    for r in range(ranks):
        shapes = json.load(open(os.path.join(out, f"rank{r}", "shapes.json")))
        for name, shape in shapes.items():
            if name in names:
                hf = names[name]
            else:
                l, rest = name.split(".", 2)[1:]
                hf = f"model.layers.{l}.{inner[rest.rsplit('.', 1)[0]]}.weight"
            full = sd[hf]
            if full.ndim == 2 and not hf.endswith("embed_tokens.weight") and "norm" not in hf:
                q = gguf.GGMLQuantizationType.Q8_0
                full = gguf.quants.dequantize(gguf.quants.quantize(full, q), q)
            got = np.fromfile(os.path.join(out, f"rank{r}", name + ".f32"),
                              dtype=np.float32).reshape(shape)
            if full.ndim == 1 or list(full.shape) == shape:
                want = full.reshape(shape)
            elif shape[0] != full.shape[0]:  # row shard (vocabulary rows may be padded)
                k = min(shape[0], full.shape[0] - r * shape[0])
                want, got = full[r * shape[0]: r * shape[0] + k], got[:k]
            else:
                want = full[:, r * shape[1]:(r + 1) * shape[1]]
            n += 1
            if not np.array_equal(got, want):
                worst += 1
                print("mismatch", r, name, np.abs(got - want).max())
    check(worst == 0, f"Q8_0 model over {ranks} rank(s): {n} parameters equal the HF tensors "
          "through gguf.quants (q/k un-permuted)")


def quantize():
    """--quantize at load: q8_0 equals the Q8_0 file gguf.quants writes (the
    same blocks through the same kernels: identical tokens and logprobs);
    q4_k_m (Q4_K with Q6_K where llama.cpp puts it) gives the same tokens
    over the launcher's ranks (--tp N) as in one process."""
    from transformers import LlamaConfig, LlamaForCausalLM
    spm = spm_vocab()
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(hidden_size=512, intermediate_size=1024,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, vocab_size=len(spm[0]),
                                         max_position_embeddings=128, tie_word_embeddings=False,
                                         bos_token_id=1, eos_token_id=2)).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.1)
    d = os.path.join(work, "hf")
    model.save_pretrained(d, safe_serialization=True)
    hf_llama_tokenizer(spm, d)
    g = os.path.join(work, "q8.gguf")
    write_gguf(g, model, "llama", spm=spm, qtype="Q8_0")
    args = ["--prompt", "hello world", "--prompt", "the lazy dog"]
    a = generate(d, args + ["--quantize", "q8_0"])
    b = generate(g, args)
    diff = max(abs(s["logprob"] - t["logprob"]) for x, y in zip(a, b)
               for s, t in zip(x["logprobs"], y["logprobs"]))
    check([x["tokens"] for x in a] == [x["tokens"] for x in b] and diff == 0.0,
          f"--quantize q8_0 generates as the Q8_0 file gguf writes (max |logprob diff| {diff:.1e})")
    if launcher:
        ranks = launcher[launcher.index("-np") + 1]
        one = generate(d, args + ["--quantize", "q4_k_m"])
        many = [json.loads(l) for l in run(launcher + [
            parallm, "generate", "--model", d, "--max-new-tokens", "12", "--temperature", "0",
            "--logprobs", "1", "--tp", ranks, "--quantize", "q4_k_m"] + args).splitlines()]
        check([x["tokens"] for x in one] == [x["tokens"] for x in many],
              f"--quantize q4_k_m: the same tokens over tp {ranks} as in one process")


{"blocks": blocks, "gpt2": gpt2, "llama": llama, "llama_q8": llama_q8,
 "quantize": quantize}[case]()
sys.exit(1 if failed else 0)
