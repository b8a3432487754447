#!/usr/bin/python3
"""Makes the GGUF files of issue 44's quantized bench (bench/quant_bench.sh), each
written by llama.cpp's own converter and quantizer (bench/llamacpp/build.sh builds them):
  gpt2, llama: bench/infer_torch_peer.py's random-weight models (GPT-2 124M; LLaMA
      shape hidden 768, 12 layers, GQA 12/4, vocab 32000), the same seeded weights
      bench/infer_bench.sh times, with a GPT-2-style byte-level BPE tokenizer trained on
      Debian's fortunes (the converter needs one; random weights do not care which);
  tiny: a small LLaMA (hidden 256, 4 layers, GQA 4/2, byte vocabulary) trained for a
      few minutes by `parallm train` on the fortunes, for the perplexity check: random
      weights give a flat perplexity. Held-out text: /usr/share/common-licenses/GPL-3
      (base-files; not in the training corpus).
Per model: f32 and f16 from convert_hf_to_gguf.py, q8_0, q4_0 and q4_k_m from
llama-quantize of the f32 file. Every step is skipped when its output exists.
Usage: make_gguf.py [OUT] (default build/quant_bench); env LLAMACPP_DIR as build.sh.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build/quant_bench").resolve()
LCPP = Path(os.environ.get("LLAMACPP_DIR", ROOT / "build/llamacpp")).resolve()
PYDEPS = LCPP / "pydeps"  # bench-private PyPI extras (never Debian's torch or numpy)
FORTUNES = Path("/usr/share/games/fortunes")
HELD_OUT = Path("/usr/share/common-licenses/GPL-3")
TYPES = ["f32", "f16", "q8_0", "q4_0", "q4_k_m"]
EOT = "<|endoftext|>"


def log(msg):
    print(f"make_gguf: {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def fortune_files():
    # The same files scripts/demo.sh tokenizes for the bundled training job.
    return sorted(p for p in FORTUNES.iterdir()
                  if p.is_file() and p.suffix not in (".dat", ".u8"))


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (the ByteLevel alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_tokenizer_config(d):
    # PreTrainedTokenizerFast: the converter's AutoTokenizer must not look for a
    # LlamaTokenizer (SentencePiece) in a llama directory. No BOS: the prompts and the
    # perplexity text are the bytes / tokens alone, in llama.cpp and parallm alike.
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": EOT, "eos_token": EOT,
        "add_bos_token": False, "add_eos_token": False, "model_max_length": 1024}, indent=1))


def bpe_tokenizer(path, vocab_size):
    """A GPT-2-style byte-level BPE (ByteLevel pre-tokenizer and decoder) trained on the
    fortunes to at most vocab_size - 1 entries, then <|endoftext|>."""
    if path.exists():
        return
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - 1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([str(p) for p in fortune_files()], trainer)
    tok.add_special_tokens([EOT])
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    log(f"tokenizer {path}: {tok.get_vocab_size()} entries")


def byte_tokenizer(d):
    """parallm's byte tokenizer as a tokenizer.json: byte b -> id b, 256 = end of text,
    so llama.cpp's BPE and parallm's tokenizer.json reader both give bytes. llama.cpp
    refuses a BPE vocabulary without merges, so it holds one that text never meets:
    NUL NUL -> id 257 (a padding row of the model)."""
    table = bytes_to_unicode()
    nul = table[0]
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": 256, "content": EOT, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False, "special": True}],
          "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                            "trim_offsets": True, "use_regex": True},
          "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                             "trim_offsets": False, "use_regex": True},
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                      "use_regex": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None,
                    "continuing_subword_prefix": None, "end_of_word_suffix": None,
                    "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                    # <|endoftext|> in the model's vocabulary too (as GPT-2's own file has
                    # it): with a gap at 256, tokenizers re-numbers the added token to 257.
                    "vocab": {**{table[b]: b for b in range(256)}, EOT: 256, nul + nul: 257},
                    "merges": [f"{nul} {nul}"]}}
    (d / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False))
    write_tokenizer_config(d)


def bench_models():
    """infer_torch_peer's two seeded random models, plus a trained BPE tokenizer."""
    hf = OUT / "hf"
    run(["/usr/bin/python3", ROOT / "bench/infer_torch_peer.py", "make", hf])
    tok = OUT / "tokenizer/tokenizer.json"
    bpe_tokenizer(tok, 32000)  # fits both vocabularies; the converter pads gpt2's to 50257
    cfg_path = hf / "gpt2/config.json"
    cfg = json.loads(cfg_path.read_text())
    if "n_ctx" not in cfg:
        # The released gpt2's config.json carries n_ctx, which the converter reads;
        # transformers 4.44 no longer writes it.
        cfg_path.write_text(json.dumps(dict(cfg, n_ctx=cfg["n_positions"]), indent=2))
    for name in ("gpt2", "llama"):
        if not (hf / name / "tokenizer.json").exists():
            shutil.copy(tok, hf / name / "tokenizer.json")
            write_tokenizer_config(hf / name)
    return {"gpt2": hf / "gpt2", "llama": hf / "llama"}


def trained_model():
    """A small LLaMA trained by parallm on the fortunes (byte tokens), as a HF dir."""
    out = OUT / "hf/tiny"
    if (out / "model.safetensors").exists():
        return out
    parallm = ROOT / "build/parallm"
    data = OUT / "data/fortunes"
    if not Path(f"{data}_train.bin").exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        run([parallm, "tokenize", *fortune_files(), "--out", data, "--val-fraction", "0.02"])
    init = OUT / "hf/tiny-init"
    if not (init / "model.safetensors").exists():
        # Dimensions multiples of 256, so q4_k_m really holds Q4_K / Q6_K blocks
        # (llama-quantize falls back to other types for rows not a multiple of 256).
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(1234)
        m = LlamaForCausalLM(LlamaConfig(
            vocab_size=320, hidden_size=256, intermediate_size=768, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
            bos_token_id=256, eos_token_id=256))
        m.save_pretrained(init, safe_serialization=True)
    steps = os.environ.get("TINY_STEPS", "300")
    tmp = OUT / "hf/tiny.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    # Niced: it measures nothing, and may share the machine with timings.
    run(["nice", "-n", "10", parallm, "train", "--init-from", init, "--data", f"{data}_train.bin",
         "--steps", steps, "--seq-len", "256", "--micro-batch-size", "8",
         "--global-batch-size", "16", "--lr", "2e-3", "--warmup", "20",
         "--log-interval", "50", "--threads", os.environ.get("TINY_THREADS", "2"),
         "--save-hf", tmp])
    byte_tokenizer(tmp)
    os.replace(tmp, out)
    return out


def convert(hf, name, bindir):
    gg = OUT / "gguf"
    gg.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(LCPP / "src"), str(LCPP / "src/gguf-py"), str(PYDEPS)]))
    for t in ("f32", "f16"):
        f = gg / f"{name}-{t}.gguf"
        if not f.exists():
            run(["/usr/bin/python3", ROOT / "bench/llamacpp/convert.py",
                 LCPP / "src/convert_hf_to_gguf.py", hf, "--outtype", t,
                 "--outfile", f"{f}.tmp"], env=env)
            os.replace(f"{f}.tmp", f)
    for t in ("q8_0", "q4_0", "q4_k_m"):
        f = gg / f"{name}-{t}.gguf"
        if not f.exists():
            with open(gg / f"{name}-{t}.quantize.log", "w") as qlog:  # its per-tensor chatter
                run([bindir / "llama-quantize", gg / f"{name}-f32.gguf", f"{f}.tmp", t.upper(),
                     "2"], stdout=qlog, stderr=qlog)
            os.replace(f"{f}.tmp", f)


def main():
    bindir = Path(subprocess.run([ROOT / "bench/llamacpp/build.sh", LCPP], check=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[-1])
    if not (PYDEPS / "sentencepiece").exists():
        # The converter's llama path imports sentencepiece before it looks for a
        # tokenizer.model; Debian has no python3-sentencepiece.
        run(["/usr/bin/python3", "-m", "pip", "install", "--quiet", "--no-deps",
             "--target", PYDEPS, "sentencepiece==0.2.3"])
    models = bench_models()
    models["tiny"] = trained_model()
    for name, hf in models.items():
        convert(hf, name, bindir)
    shutil.copy(HELD_OUT, OUT / "held_out.txt")
    for f in sorted((OUT / "gguf").glob("*.gguf")):
        print(f)


if __name__ == "__main__":
    main()
