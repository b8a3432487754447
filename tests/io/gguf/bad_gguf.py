"""Writes the bad GGUF files gguf_bad_input.sh feeds to `parallm generate`:
Usage: bad_gguf.py DIR -> DIR/{good,truncated_header,truncated_data,bad_magic,
version1,q5_k,mamba}.gguf. good.gguf is a 1-layer LLaMA (hidden 256, zeros)
with a 3-token byte-level tokenizer; the others break one thing each."""
import os
import sys

import gguf
import numpy as np

d = sys.argv[1]
H, I, V = 256, 256, 3


def llama(path, arch="llama", q_type=None):
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(H)
    w.add_feed_forward_length(I)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["a", "b", "ab"])
    w.add_token_merges(["a b"])
    z = lambda *s: np.zeros(s, dtype=np.float32)
    w.add_tensor("token_embd.weight", z(V, H))
    for name, shape in (("attn_norm", (H,)), ("attn_q", (H, H)), ("attn_k", (H, H)),
                        ("attn_v", (H, H)), ("attn_output", (H, H)), ("ffn_norm", (H,)),
                        ("ffn_gate", (I, H)), ("ffn_up", (I, H)), ("ffn_down", (H, I))):
        if name == "attn_q" and q_type is not None:
            t = gguf.GGMLQuantizationType[q_type]
            nbytes = H * H // 256 * gguf.GGML_QUANT_SIZES[t][1]
            w.add_tensor(f"blk.0.{name}.weight", np.zeros((H, nbytes // H), dtype=np.uint8),
                         raw_dtype=t)
        else:
            w.add_tensor(f"blk.0.{name}.weight", z(*shape))
    w.add_tensor("output_norm.weight", z(H))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


good = os.path.join(d, "good.gguf")
llama(good)
data = open(good, "rb").read()
open(os.path.join(d, "truncated_header.gguf"), "wb").write(data[:300])
open(os.path.join(d, "truncated_data.gguf"), "wb").write(data[:-1000])
open(os.path.join(d, "bad_magic.gguf"), "wb").write(b"GGML" + data[4:])
open(os.path.join(d, "version1.gguf"), "wb").write(data[:4] + (1).to_bytes(4, "little") + data[8:])
llama(os.path.join(d, "q5_k.gguf"), q_type="Q5_K")
llama(os.path.join(d, "mamba.gguf"), arch="mamba")
