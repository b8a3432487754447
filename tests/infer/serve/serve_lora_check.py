"""Many LoRA adapters served at once by `parallm serve`, with the official
openai client (docs/serving.md, "Many LoRA adapters").

A tiny LLaMA (random weights, the byte-level BPE tokenizer of
tiny_text_model.py) and eight PEFT adapters made by the real `peft` package
(different ranks and target modules, one rsLoRA, B drawn non-zero) are served
with `--lora-modules a0=DIR ... a7=DIR`. Then:
  - the nine models (base + 8 adapters) are asked at once (one batch), twice:
    each greedy completion equals peft's own greedy tokens for that adapter,
    and every token's logprob equals peft's within the bound of
    docs/testing.md ("Many adapters in one batch");
  - /v1/models lists the base and each adapter with "parent": the base;
  - an adapter loaded at run time (POST /v1/load_lora_adapter) answers as
    peft does, then after POST /v1/unload_lora_adapter its name is a 404;
  - an unknown model is 404 (openai.NotFoundError); a malformed adapter
    directory is a 400 naming the file, a duplicate name a 400, and the
    server keeps serving; /metrics counts the requests per adapter.
FAMILY gpt2 serves a tiny GPT-2 (tiny_text_model.py) with adapters on its
Conv1D modules (c_attn's one A shared by q, k and v; c_proj; c_fc) instead.
Extra arguments go to the server (e.g. --ngram-draft 2: adapters and
speculative drafts together, the answers still peft's).
Usage: serve_lora_check.py WORKDIR PARALLM [llama|gpt2] [SERVE_FLAG ...]"""
import concurrent.futures
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from check_support import check, failures, openai_client  # noqa: E402

import openai  # noqa: E402
import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

work, parallm, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
family = extra.pop(0) if extra and not extra[0].startswith("--") else "llama"
os.makedirs(work, exist_ok=True)
NAME = "tiny-" + family
MAX_TOKENS = 8
PROMPTS = ["hello world", "the quick brown fox", "jumps over the lazy dog", "你好世界 hello"]
LLAMA_ADAPTERS = [  # (rank, alpha, target modules, rslora)
    (4, 8, ["q_proj", "v_proj"], False),
    (8, 16, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], False),
    (2, 4, ["o_proj", "down_proj"], False),
    (6, 6, ["gate_proj", "up_proj"], False),
    (4, 16, ["k_proj"], True),
    (8, 8, ["q_proj", "o_proj", "up_proj"], False),
    (2, 2, ["v_proj", "down_proj"], False),
    (16, 32, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], True),
]


GPT2_ADAPTERS = [
    (4, 8, ["c_attn"], False),
    (8, 16, ["c_attn", "c_proj", "c_fc"], False),
    (2, 4, ["c_proj"], False),
    (6, 6, ["c_fc"], False),
    (4, 16, ["c_attn"], True),
    (8, 8, ["c_attn", "c_fc"], False),
    (2, 2, ["c_proj", "c_fc"], False),
    (16, 32, ["c_attn", "c_proj", "c_fc"], True),
]
ADAPTERS = GPT2_ADAPTERS if family == "gpt2" else LLAMA_ADAPTERS
LATE = (4, 8, ["c_attn", "c_fc"] if family == "gpt2" else ["q_proj", "down_proj"], False)
# A module adapter 0 does not have: the config lists it, the file lacks its tensors.
MISSING = "c_fc" if family == "gpt2" else "o_proj"


def build_base(model_dir):
    from tiny_text_model import build, save, train_tokenizer
    if family == "gpt2":
        return build(model_dir, n_positions=256, seed=3)
    tok = train_tokenizer()
    torch.manual_seed(3)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=160,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, tie_word_embeddings=False, eos_token_id=0, bos_token_id=0))
    return save(model, tok, model_dir, chat_template=None)


def build_adapter(base, i, spec, out_dir):
    r, alpha, targets, rslora = spec
    torch.manual_seed(100 + i)
    pm = get_peft_model(copy.deepcopy(base), LoraConfig(
        r=r, lora_alpha=alpha, target_modules=targets, lora_dropout=0.0, use_rslora=rslora,
        task_type="CAUSAL_LM"))
    for n, p in pm.named_parameters():
        if "lora_B" in n:
            torch.nn.init.normal_(p, std=0.3)  # a trained adapter: B non-zero
    pm.eval()
    pm.save_pretrained(out_dir, safe_serialization=True)
    return pm


def greedy(model, ids):
    """peft/transformers' greedy tokens up to EOS (id 0: the server ends on it,
    reports its logprob, not its text) with each one's logprob, and the logits' scale."""
    ids = list(ids)
    out, lps, scale = [], [], 0.0
    with torch.no_grad():
        for _ in range(MAX_TOKENS):
            logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
            scale = max(scale, logits.abs().max().item())
            t = int(logits.argmax())
            lps.append(torch.log_softmax(logits, -1)[t].item())
            out.append(t)
            ids.append(t)
            if t == 0:
                break
    return out, lps, scale


base, tok = build_base(os.path.join(work, "model"))
peft_models, dirs = [], []
for i, spec in enumerate(ADAPTERS):
    d = os.path.join(work, f"adapter{i}")
    peft_models.append(build_adapter(base, i, spec, d))
    dirs.append(d)
late_dir = os.path.join(work, "late")
late = build_adapter(base, 9, LATE, late_dir)
bad_dir = os.path.join(work, "bad")
os.makedirs(bad_dir, exist_ok=True)
cfg = json.load(open(os.path.join(dirs[0], "adapter_config.json")))
cfg["target_modules"] = ADAPTERS[0][2] + [MISSING]
json.dump(cfg, open(os.path.join(bad_dir, "adapter_config.json"), "w"))
shutil.copy(os.path.join(dirs[0], "adapter_model.safetensors"), bad_dir)

# The reference: every (model, prompt) pair's greedy tokens under peft.
refs = {}
for p in PROMPTS:
    ids = tok(p)["input_ids"]
    refs[(NAME, p)] = greedy(base, ids)
    for i, pm in enumerate(peft_models):
        refs[(f"a{i}", p)] = greedy(pm, ids)
    refs[("late", p)] = greedy(late, ids)
differ = sum(refs[(f"a{i}", p)][0] != refs[(NAME, p)][0] for i in range(8) for p in PROMPTS)
check(differ >= 16, f"the adapters change the greedy tokens ({differ} of 32 (adapter, prompt) pairs)")

modules = [f"a{i}={d}" for i, d in enumerate(dirs)]
server = subprocess.Popen([parallm, "serve", "--model", os.path.join(work, "model"), "--port", "0",
                           "--served-model-name", NAME, "--max-running", "16", "--threads", "2",
                           "--max-loras", "10", *extra, "--lora-modules", *modules],
                          stdout=subprocess.PIPE, text=True)
try:
    client, port = openai_client(server)

    def ask(model, prompt):
        r = client.completions.create(model=model, prompt=prompt, max_tokens=MAX_TOKENS,
                                      temperature=0, logprobs=0)
        c = r.choices[0]
        return r.model, c.text, c.logprobs.token_logprobs

    def agrees(model, prompt, got, what):
        ids, lps, scale = refs[(model, prompt)]
        tol = 2e-5 * scale + 1e-6  # docs/testing.md, "Many adapters in one batch"
        name, text, got_lps = got
        want = tok.decode(ids, skip_special_tokens=True)
        ok = name == model and text == want and len(got_lps) == len(lps) and all(
            abs(a - b) <= tol for a, b in zip(got_lps, lps))
        check(ok, f"{what}: {model} on {prompt!r} gives peft's greedy text and logprobs"
                  + ("" if ok else f" (got {name} {text!r} {got_lps}, want {want!r} {lps})"))

    names = [NAME] + [f"a{i}" for i in range(8)]
    for rnd in range(2):
        jobs = [(m, p) for p in PROMPTS[rnd * 2:rnd * 2 + 2] for m in names]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as ex:
            answers = list(ex.map(lambda j: ask(*j), jobs))
        for (m, p), got in zip(jobs, answers):
            agrees(m, p, got, f"batch {rnd}")

    listed = {m.id: m for m in client.models.list().data}
    check(set(listed) == set(names), f"/v1/models lists the base and 8 adapters ({sorted(listed)})")
    check(all(getattr(listed[f"a{i}"], "parent", None) == NAME for i in range(8)),
          "each adapter's card has parent: the base model")

    def post(path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    st, body = post("/v1/load_lora_adapter", {"lora_name": "late", "lora_path": late_dir})
    check(st == 200, f"load_lora_adapter answers 200 ({st} {body})")
    check("late" in {m.id for m in client.models.list().data}, "the loaded adapter is listed")
    for p in PROMPTS[:2]:
        agrees("late", p, ask("late", p), "loaded at run time")
    st, body = post("/v1/load_lora_adapter", {"lora_name": "late", "lora_path": late_dir})
    check(st == 400 and "already loaded" in body, f"a duplicate name is 400 ({st} {body})")
    st, body = post("/v1/load_lora_adapter", {"lora_name": "bad", "lora_path": bad_dir})
    check(st == 400 and "adapter_model.safetensors" in body and f"{MISSING}.lora_A.weight" in body,
          f"a malformed adapter is 400 naming the file and key ({st} {body})")
    st, body = post("/v1/load_lora_adapter", {"lora_name": "extra", "lora_path": dirs[0]})
    check(st == 200, f"a tenth adapter loads ({st} {body})")
    st, body = post("/v1/load_lora_adapter", {"lora_name": "extra2", "lora_path": dirs[1]})
    check(st == 400 and "--max-loras" in body, f"an eleventh is 400 naming --max-loras ({st} {body})")
    st, body = post("/v1/unload_lora_adapter", {"lora_name": "extra"})
    check(st == 200, f"unloading it answers 200 ({st} {body})")
    st, body = post("/v1/load_lora_adapter", {"lora_name": "x"})
    check(st == 400 and "lora_path" in body, f"a load without lora_path is 400 ({st} {body})")
    st, body = post("/v1/unload_lora_adapter", {"lora_name": "late"})
    check(st == 200, f"unload_lora_adapter answers 200 ({st} {body})")
    st, body = post("/v1/unload_lora_adapter", {"lora_name": "late"})
    check(st == 404, f"unloading an unknown adapter is 404 ({st} {body})")
    for model in ("late", "no-such-adapter"):
        try:
            ask(model, PROMPTS[0])
            check(False, f"model {model!r} is refused")
        except openai.NotFoundError as e:
            check(e.status_code == 404 and model in str(e), f"model {model!r} is a 404 naming it")
    agrees("a3", PROMPTS[0], ask("a3", PROMPTS[0]), "after the errors")

    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    counts = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^parallm_lora_requests_total\{lora_name="([^"]+)"\} (\S+)$', metrics, re.M)}
    want = {f"a{i}": 4.0 for i in range(8)}
    want["a3"] = 5.0
    want["late"] = 2.0
    check(counts == want, f"/metrics counts requests per adapter ({counts})")
    if "--ngram-draft" in extra:
        drafted = float(re.search(r"^parallm_spec_decode_num_draft_tokens_total (\S+)$", metrics,
                                  re.M).group(1))
        check(drafted > 0, f"drafts were verified under adapters ({drafted:.0f})")
finally:
    server.terminate()
    server.wait(timeout=30)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
