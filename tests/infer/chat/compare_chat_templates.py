#!/usr/bin/python3
"""Holds parallm's chat-template renderings (chat_template_dump) to transformers.

For each fixture tokenizer_config.json, loads a PreTrainedTokenizerFast from a
temporary folder holding that config and a one-word tokenizer.json, so that
transformers itself reads the template and the special tokens, and renders every
conversation with apply_chat_template(tokenize=False), passing tools= for the
conversations that carry a tool list. A rendering matches when
the text is byte-identical, or when both sides raised from the template's
raise_exception with the same message. A config without chat_template must be
refused by transformers too; parallm's plain format is then compared by passing
its source as chat_template=. Prints the matches per fixture; exits 1 on any
mismatch.

Usage: compare_chat_templates.py <fixtures dir> <dump.json>
"""
import json
import os
import sys
import tempfile
import warnings

from jinja2.exceptions import TemplateError
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import PreTrainedTokenizerFast


def load_tokenizer(config_path, folder):
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    config.setdefault("tokenizer_class", "PreTrainedTokenizerFast")
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)
    Tokenizer(WordLevel({"hello": 0}, unk_token="hello")).save(os.path.join(folder, "tokenizer.json"))
    return PreTrainedTokenizerFast.from_pretrained(folder), config


def render(tok, messages, add_generation_prompt, chat_template, tools=None):
    try:
        text = tok.apply_chat_template(messages, tools=tools, tokenize=False,
                                       add_generation_prompt=add_generation_prompt,
                                       chat_template=chat_template)
        return {"text": text}
    except TemplateError as e:
        # raise_exception raises TemplateError(message); jinja's own failures
        # (UndefinedError, TypeError, ...) are "error".
        if type(e) is TemplateError:
            return {"raised": e.message}
        return {"error": f"{type(e).__name__}: {e}"}
    except Exception as e:  # noqa: BLE001 - any failure of the template counts as an error
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' clean_up_tokenization_spaces notice
    self_test = sys.argv[1] == "--self-test"
    fixtures_dir, dump_path = sys.argv[-2], sys.argv[-1]
    with open(dump_path, encoding="utf-8") as f:
        dump = json.load(f)
    if self_test:
        # Plant one trailing space and one changed raise message: both must be caught.
        texts = [r for r in dump["renderings"] if "text" in r]
        raised = [r for r in dump["renderings"] if "raised" in r]
        texts[len(texts) // 2]["text"] += " "
        raised[0]["raised"] += "!"
        failures, matched, total = compare(fixtures_dir, dump, quiet=True)
        caught = total - matched
        print(f"chat templates self-test: {caught} of 2 planted differences caught")
        return 0 if caught == 2 else 1
    failures, matched, total = compare(fixtures_dir, dump, quiet=False)
    return 0 if not failures and matched == total else 1


def compare(fixtures_dir, dump, quiet):
    conversations = {c["name"]: (c["messages"], c.get("tools")) for c in
                     json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "conversations.json"), encoding="utf-8"))}
    tokenizers = {}
    failures = []
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, fixture in sorted(dump["fixtures"].items()):
            folder = os.path.join(tmp, name)
            os.makedirs(folder)
            tok, config = load_tokenizer(os.path.join(fixtures_dir, name + ".json"), folder)
            if fixture["plain"]:
                try:
                    tok.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False)
                    failures.append(f"{name}: transformers rendered a config without chat_template")
                except ValueError:
                    pass
                tokenizers[name] = (tok, fixture["source"])
            else:
                if fixture["source"] != config["chat_template"]:
                    failures.append(f"{name}: parallm read a different template than the config holds")
                tokenizers[name] = (tok, None)
        for r in dump["renderings"]:
            tok, chat_template = tokenizers[r["fixture"]]
            messages, tools = conversations[r["conversation"]]
            want = render(tok, messages, r["add_generation_prompt"], chat_template, tools)
            got = {k: r[k] for k in ("text", "raised", "error") if k in r}
            where = f"{r['fixture']} / {r['conversation']} / add_generation_prompt={r['add_generation_prompt']}"
            ok = False
            if "text" in want and "text" in got:
                ok = want["text"] == got["text"]
                bos = tok.bos_token
                want_bos = bool(bos) and want["text"].startswith(bos)
                if ok and r.get("starts_with_bos") != want_bos:
                    ok = False
                    failures.append(f"{where}: starts_with_bos {r.get('starts_with_bos')}, want {want_bos}")
            elif "raised" in want and "raised" in got:
                ok = want["raised"] == got["raised"]
            elif "error" in want and "error" in got:
                ok = True  # both refuse (e.g. messages[0] of an empty list); messages differ by design
            if not ok:
                failures.append(f"{where}:\n  transformers: {want!r}\n  parallm:      {got!r}")
            c = counts.setdefault(r["fixture"], {"match": 0, "total": 0, "raised": 0, "error": 0})
            c["total"] += 1
            c["match"] += ok
            c["raised"] += ok and "raised" in got
            c["error"] += ok and "error" in got
    total = sum(c["total"] for c in counts.values())
    matched = sum(c["match"] for c in counts.values())
    if quiet:
        return failures, matched, total
    for name, c in sorted(counts.items()):
        print(f"{name:24s} {c['match']:3d}/{c['total']:3d} match: "
              f"{c['match'] - c['raised'] - c['error']} texts byte-identical, "
              f"{c['raised']} same raise_exception message, {c['error']} refused by both")
    print(f"chat templates: {matched}/{total} renderings match transformers' apply_chat_template")
    for f in failures:
        print("MISMATCH " + f)
    return failures, matched, total


if __name__ == "__main__":
    sys.exit(main())
