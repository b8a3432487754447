"""A tiny GPT-2 with its own byte-level BPE tokenizer and chat template,
saved together as a Hugging Face directory, for the tests that drive
parallm through a model directory's tokenizer.json (generate, serve).
Weights are drawn with a large standard deviation so greedy choices are
far from ties; EOS and BOS are <|endoftext|> (id 0)."""
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

CORPUS = "hello world, the quick brown fox jumps over the lazy dog. 你好世界"
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def train_tokenizer():
    """The 400-token byte-level BPE of CORPUS, <|endoftext|> its id 0."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS] * 50, trainer)
    return tok


def save(model, tok, model_dir, chat_template=CHAT_TEMPLATE):
    """Weights drawn wide (well-separated logits: no near-ties), then the model
    and its tokenizer saved in model_dir; returns (model, tokenizer)."""
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3)
    model.eval()
    model.save_pretrained(model_dir, safe_serialization=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>")
    if chat_template is not None:
        fast.chat_template = chat_template
    fast.save_pretrained(model_dir)
    return model, fast


def build(model_dir, n_positions=128, seed=0):
    """Saves the model and tokenizer in model_dir; returns (model, tokenizer)."""
    tok = train_tokenizer()
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=n_positions,
                                       vocab_size=tok.get_vocab_size(), eos_token_id=0,
                                       bos_token_id=0))
    return save(model, tok, model_dir)
