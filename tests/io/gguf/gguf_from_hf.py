"""A small GGUF writer for the tests, following llama.cpp's converter
(convert_hf_to_gguf.py, conversion/gpt2.py and llama.py) for the tiny
models transformers saves: its tensor names, GPT-2's Conv1D weights
transposed to (out, in), LLaMA's q/k rows permuted to GGML's interleaved
rotary order, its metadata keys and its tokenizer keys (tokenizer.ggml.*,
tokenizer.chat_template). Not the converter itself: only what the tests need.

write_gguf(path, model, tokenizer_json, *, qtype=None, ...) where qtype
("Q8_0", "Q4_0") quantises the 2-D linear weights with gguf.quants."""
import json

import gguf
import numpy as np
import torch

GPT2_BLOCK = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
              "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
LLAMA_BLOCK = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
               "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
               "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
               "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
TOP = {"transformer.wte.weight": "token_embd.weight", "transformer.wpe.weight": "position_embd.weight",
       "transformer.ln_f.weight": "output_norm.weight", "transformer.ln_f.bias": "output_norm.bias",
       "model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
       "lm_head.weight": "output.weight"}


def permute(w, n_head, n_head_kv):
    """llama.cpp's LlamaModel.permute."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_name(hf):
    if hf in TOP:
        return TOP[hf]
    for prefix, table in (("transformer.h.", GPT2_BLOCK), ("model.layers.", LLAMA_BLOCK)):
        if hf.startswith(prefix):
            layer, rest = hf[len(prefix):].split(".", 1)
            for h, g in table.items():
                if rest.startswith(h + "."):
                    return f"blk.{layer}.{g}.{rest[len(h) + 1:]}"
    return None


def tensors(model, arch):
    cfg = model.config
    for name, t in model.state_dict().items():
        if name.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        if arch == "gpt2" and name == "lm_head.weight":
            continue  # tied to wte
        if arch == "llama" and name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        t = t.detach().float()
        if arch == "gpt2" and name.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight")):
            t = t.transpose(1, 0)
        if arch == "llama":
            if name.endswith(("q_proj.weight", "q_proj.bias")):
                t = permute(t, cfg.num_attention_heads, cfg.num_attention_heads)
            if name.endswith(("k_proj.weight", "k_proj.bias")):
                t = permute(t, cfg.num_attention_heads, cfg.num_key_value_heads)
        g = gguf_name(name)
        assert g is not None, name
        yield g, t.contiguous().numpy().astype(np.float32)


LINEAR = ("attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_qkv.weight",
          "attn_output.weight", "ffn_up.weight", "ffn_gate.weight", "ffn_down.weight",
          "output.weight")


def add_gpt2_tokenizer(w, tj):
    vocab = dict(tj["model"]["vocab"])
    special = {}
    for a in tj["added_tokens"]:
        vocab[a["content"]] = a["id"]
        special[a["id"]] = a["special"]
    toks = [None] * (max(vocab.values()) + 1)
    for t, i in vocab.items():
        toks[i] = t
    types = [gguf.TokenType.CONTROL if special.get(i) else
             gguf.TokenType.USER_DEFINED if i in special else gguf.TokenType.NORMAL
             for i in range(len(toks))]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)


def add_llama_tokenizer(w, spm):
    """spm: (tokens, scores, types) of a SentencePiece vocabulary."""
    toks, scores, types = spm
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)


def write_gguf(path, model, arch, *, gpt2_tokenizer=None, spm=None, qtype=None,
               chat_template=None, eos_id=None):
    cfg = model.config
    w = gguf.GGUFWriter(path, arch)
    if arch == "gpt2":
        w.add_block_count(cfg.n_layer)
        w.add_context_length(cfg.n_positions)
        w.add_embedding_length(cfg.n_embd)
        w.add_feed_forward_length(4 * cfg.n_embd)
        w.add_head_count(cfg.n_head)
        w.add_layer_norm_eps(cfg.layer_norm_epsilon)
    else:
        w.add_block_count(cfg.num_hidden_layers)
        w.add_context_length(cfg.max_position_embeddings)
        w.add_embedding_length(cfg.hidden_size)
        w.add_feed_forward_length(cfg.intermediate_size)
        w.add_head_count(cfg.num_attention_heads)
        w.add_head_count_kv(cfg.num_key_value_heads)
        w.add_rope_freq_base(cfg.rope_theta)
        w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
        w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
        w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if qtype is None else
                    getattr(gguf.LlamaFileType, "MOSTLY_" + qtype))
    if gpt2_tokenizer is not None:
        add_gpt2_tokenizer(w, gpt2_tokenizer)
    if spm is not None:
        add_llama_tokenizer(w, spm)
    if eos_id is not None:
        w.add_eos_token_id(eos_id)
        w.add_bos_token_id(eos_id)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    for name, t in tensors(model, arch):
        if qtype is not None and name.endswith(LINEAR):
            q = gguf.GGMLQuantizationType[qtype]
            w.add_tensor(name, gguf.quants.quantize(t, q), raw_dtype=q)
        else:
            w.add_tensor(name, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
