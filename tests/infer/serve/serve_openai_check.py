"""`parallm serve` against the official openai client, and against raw HTTP.

A tiny GPT-2 with its own tokenizer and chat template (tests/infer/
tiny_text_model.py) is served with `parallm serve --port 0`. The openai
client then checks chat and completions, streamed and not, n > 1, stop
strings (excluded from the text, finish_reason "stop"), "length" endings,
usage counts against the tokenizer's own count (transformers), logprobs in
each endpoint's shape, and that greedy text equals `parallm generate`'s for
the same prompt, also when requests run concurrently. Raw HTTP then sends
the bad and unkind clients of serve_robustness.py (malformed JSON, wrong
types, a 10 MB body, disconnects, slow clients ...): each must get the
right status and the server must keep serving, with every KV block free
afterwards. Finally SIGTERM during a
stream: the stream ends properly and the server exits 0.
Usage: serve_openai_check.py WORKDIR PARALLM"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from check_support import check, failures, listening_port  # noqa: E402,F401
from tiny_text_model import build  # noqa: E402
import serve_robustness  # noqa: E402

import openai  # noqa: E402

work, parallm = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
log_path = os.path.join(work, "requests.jsonl")
if os.path.exists(log_path):
    os.remove(log_path)
# Seed 5 gives greedy text that changes along the way (the stop-string
# checks need a piece that does not start it).
_, fast = build(model_dir, n_positions=1024, seed=5)
ENV = dict(os.environ, OMP_NUM_THREADS="1")
NAME = "tiny"


def generate_cli(args):
    """parallm generate --json: (text, finish_reason) of one prompt."""
    run = subprocess.run([parallm, "generate", "--model", model_dir, "--temperature", "0",
                          "--json"] + args, capture_output=True, text=True, env=ENV, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.splitlines()[0])
    return got["text"], "stop" if got["finish_reason"] in ("eos", "stop") else "length"


server = subprocess.Popen([parallm, "serve", "--model", model_dir, "--port", "0",
                           "--served-model-name", NAME, "--max-running", "4", "--max-waiting",
                           "16", "--log-file", log_path, "--shutdown-grace", "10"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
try:
    line = server.stdout.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        server.kill()
        print("no listening line:", line, server.stderr.read())
        sys.exit(1)
    port = int(m.group(1))
    print(line.strip())
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                           max_retries=0, timeout=60)

    # --- openai client -------------------------------------------------------
    check([x.id for x in client.models.list().data] == [NAME], "models.list names the model")

    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello fox"}]
    chat_ids = fast.apply_chat_template(msgs, add_generation_prompt=True)
    r = client.chat.completions.create(model=NAME, messages=msgs, max_tokens=12, temperature=0)
    want_text, want_finish = generate_cli(["--chat", "--system", "be brief", "--prompt",
                                           "hello fox", "--max-new-tokens", "12"])
    c = r.choices[0]
    check(r.object == "chat.completion" and r.id.startswith("chatcmpl-") and r.model == NAME,
          "chat: object, id, model")
    check(c.message.role == "assistant" and c.message.content == want_text,
          f"chat greedy text equals parallm generate --chat ({want_text!r})")
    check(c.finish_reason == want_finish, f"chat finish_reason {c.finish_reason} == {want_finish}")
    check(r.usage.prompt_tokens == len(chat_ids),
          f"chat usage.prompt_tokens {r.usage.prompt_tokens} == template+tokenizer {len(chat_ids)}")
    check(r.usage.completion_tokens == 12 and r.usage.total_tokens == len(chat_ids) + 12,
          "chat usage.completion_tokens = max_tokens, total = sum")
    check(c.logprobs is None, "chat: no logprobs unless asked")

    r2 = client.chat.completions.create(model=NAME, messages=msgs, max_completion_tokens=12,
                                        temperature=0)
    check(r2.choices[0].message.content == want_text, "max_completion_tokens works as max_tokens")

    chunks = list(client.chat.completions.create(
        model=NAME, messages=msgs, max_tokens=12, temperature=0, stream=True,
        stream_options={"include_usage": True}))
    body = [k for k in chunks if k.choices]
    check(body[0].choices[0].delta.role == "assistant", "chat stream: first delta has the role")
    check(all(k.object == "chat.completion.chunk" and k.id == chunks[0].id for k in chunks),
          "chat stream: one id, object chat.completion.chunk")
    streamed = "".join(k.choices[0].delta.content or "" for k in body)
    check(streamed == want_text, f"chat stream text equals the non-streamed ({streamed!r})")
    check(sum(1 for k in body if (k.choices[0].delta.content or "")) >= 2,
          "chat stream: text comes in several deltas")
    check(body[-1].choices[0].finish_reason == want_finish and
          all(k.choices[0].finish_reason is None for k in body[:-1]),
          "chat stream: finish_reason only on the last choice chunk")
    check(not chunks[-1].choices and chunks[-1].usage is not None and
          chunks[-1].usage.prompt_tokens == len(chat_ids) and
          chunks[-1].usage.completion_tokens == 12 and all(k.usage is None for k in body),
          "chat stream: a usage chunk (choices []) at the end, usage null before")

    prompt = "the quick brown fox"
    want_ctext, want_cfinish = generate_cli(["--prompt", prompt, "--max-new-tokens", "16"])
    r = client.completions.create(model=NAME, prompt=prompt, max_tokens=16, temperature=0)
    check(r.object == "text_completion" and r.id.startswith("cmpl-"), "completions: object, id")
    check(r.choices[0].text == want_ctext,
          f"completions greedy text equals parallm generate ({want_ctext!r})")
    check(r.choices[0].finish_reason == want_cfinish, "completions finish_reason")
    check(r.usage.prompt_tokens == len(fast(prompt).input_ids),
          f"completions usage.prompt_tokens {r.usage.prompt_tokens} == tokenizer's "
          f"{len(fast(prompt).input_ids)}")
    check(r.usage.completion_tokens == 16, "completions usage.completion_tokens")
    ids_r = client.completions.create(model=NAME, prompt=fast(prompt).input_ids, max_tokens=16,
                                      temperature=0)
    check(ids_r.choices[0].text == want_ctext, "completions: a prompt of token ids")

    cchunks = list(client.completions.create(model=NAME, prompt=prompt, max_tokens=16,
                                             temperature=0, stream=True))
    check("".join(k.choices[0].text for k in cchunks) == want_ctext and
          cchunks[-1].choices[0].finish_reason == want_cfinish,
          "completions stream: text and finish_reason equal the non-streamed")

    # Stop strings: cut the greedy text where a piece of it first differs.
    def stop_for(text):
        k = next(i for i in range(1, len(text)) if text[i] != text[0])
        return text[k:k + 2], text[:k]
    stop, cut = stop_for(want_ctext)
    check(cut != "", f"the stop string {stop!r} leaves text before it ({cut!r})")
    r = client.completions.create(model=NAME, prompt=prompt, max_tokens=16, temperature=0,
                                  stop=[stop, "never-there"])
    check(r.choices[0].text == cut and r.choices[0].finish_reason == "stop",
          f"stop {stop!r}: text {r.choices[0].text!r} == {cut!r}, finish_reason stop")
    sch = list(client.completions.create(model=NAME, prompt=prompt, max_tokens=16,
                                         temperature=0, stop=stop, stream=True))
    streamed = "".join(k.choices[0].text for k in sch)
    check(streamed == cut and sch[-1].choices[0].finish_reason == "stop",
          f"stop, streamed: {streamed!r} (the stop string never sent)")
    chat_stop, chat_cut = stop_for(want_text)
    r = client.chat.completions.create(model=NAME, messages=msgs, max_tokens=12, temperature=0,
                                       stop=chat_stop)
    check(r.choices[0].message.content == chat_cut and r.choices[0].finish_reason == "stop",
          f"chat stop {chat_stop!r}: {r.choices[0].message.content!r} == {chat_cut!r}")

    # n > 1: each choice its own sequence; a seed reproduces them all.
    kw = dict(model=NAME, prompt=prompt, max_tokens=10, temperature=1.0, seed=7, n=3)
    a, b = client.completions.create(**kw), client.completions.create(**kw)
    texts = [x.text for x in sorted(a.choices, key=lambda x: x.index)]
    check([x.index for x in sorted(a.choices, key=lambda x: x.index)] == [0, 1, 2],
          "n=3: choices 0, 1, 2")
    check(len(set(texts)) > 1, f"n=3 sampled choices differ: {texts}")
    check(texts == [x.text for x in sorted(b.choices, key=lambda x: x.index)],
          "the same seed gives the same choices")
    check(a.usage.prompt_tokens == len(fast(prompt).input_ids) and a.usage.completion_tokens == 30,
          "n=3 usage: prompt counted once, completion tokens of all choices")
    nch = list(client.chat.completions.create(model=NAME, messages=msgs, max_tokens=6,
                                              temperature=0.8, seed=3, n=2, stream=True))
    by = {0: "", 1: ""}
    roles, finishes = set(), set()
    for k in nch:
        for ch in k.choices:
            by[ch.index] += ch.delta.content or ""
            if ch.delta.role:
                roles.add(ch.index)
            if ch.finish_reason:
                finishes.add(ch.index)
    check(roles == {0, 1} and finishes == {0, 1} and all(by.values()),
          f"n=2 streamed: each choice has its role, text and finish ({by})")
    nr = client.chat.completions.create(model=NAME, messages=msgs, max_tokens=6,
                                        temperature=0.8, seed=3, n=2)
    check({c.index: c.message.content for c in nr.choices} == by,
          "n=2 streamed equals not streamed (same seed)")

    # Logprobs, in each endpoint's shape.
    r = client.chat.completions.create(model=NAME, messages=msgs, max_tokens=5, temperature=0,
                                       logprobs=True, top_logprobs=3)
    lp = r.choices[0].logprobs.content
    check(len(lp) == 5 and all(len(t.top_logprobs) == 3 for t in lp) and
          all(t.logprob <= 0 and t.token == t.top_logprobs[0].token and
              abs(t.logprob - t.top_logprobs[0].logprob) < 1e-9 for t in lp) and
          "".join(t.token for t in lp) == r.choices[0].message.content,
          "chat logprobs: one entry per token, greedy token is the top one, tokens spell the text")
    r = client.completions.create(model=NAME, prompt=prompt, max_tokens=5, temperature=0,
                                  logprobs=2)
    clp = r.choices[0].logprobs
    check(len(clp.tokens) == len(clp.token_logprobs) == len(clp.top_logprobs) ==
          len(clp.text_offset) == 5 and all(len(t) <= 2 for t in clp.top_logprobs) and
          clp.text_offset[0] == 0 and clp.text_offset == sorted(clp.text_offset),
          "completions logprobs: tokens, token_logprobs, top_logprobs, text_offset")

    # Concurrent greedy requests give what each gives alone.
    prompts = ["hello world", "the lazy dog", "你好", "quick brown", "fox jumps over", "dog."]
    alone = [client.completions.create(model=NAME, prompt=p, max_tokens=20,
                                       temperature=0).choices[0].text for p in prompts]
    together = [None] * len(prompts)

    def one(i):
        together[i] = client.completions.create(model=NAME, prompt=prompts[i], max_tokens=20,
                                                temperature=0).choices[0].text
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(together == alone, "6 concurrent greedy requests equal each alone")

    # --- raw HTTP: bad and unkind clients (serve_robustness.py) -----------
    serve_robustness.run(port, check, NAME, context=1024, queue_full_n=40)
    check(serve_robustness.pool_is_whole(port), "every KV block is free after them")

    # /health, /metrics, the request log.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/health")
    resp = conn.getresponse()
    check(resp.status == 200 and json.loads(resp.read())["status"] == "ok", "/health 200")
    conn.request("GET", "/metrics")
    metrics = conn.getresponse().read().decode()
    conn.close()
    for name in ["parallm_time_to_first_token_seconds_count", "parallm_inter_token_latency_seconds_bucket",
                 "parallm_e2e_request_latency_seconds_sum", "parallm_num_requests_running",
                 "parallm_generation_tokens_total",
                 'parallm_http_requests_total{endpoint="/v1/completions",status="400"}',
                 'parallm_http_requests_total{endpoint="/v1/completions",status="413"}']:
        check(name in metrics, f"/metrics has {name}")
    ttft_count = int(re.search(r"parallm_time_to_first_token_seconds_count (\d+)", metrics).group(1))
    check(ttft_count >= 20, f"ttft recorded per request ({ttft_count})")
    entries = [json.loads(x) for x in open(log_path)]
    dropped = [e for e in entries if e.get("status") == 499]
    check(len(dropped) == 2 and dropped[0]["stream"] and dropped[0]["completion_tokens"] < 900
          and not dropped[1]["stream"] and dropped[1]["completion_tokens"] < 4 * 1008,
          "the disconnected stream and non-streamed request were cancelled early "
          f"({[(e['stream'], e['completion_tokens']) for e in dropped]})")
    check(all("latency_s" in e for e in entries) and
          any(e.get("ttft_s") is not None for e in entries), "request log: latency and ttft")

    # SIGTERM during a stream: the stream ends properly, the server exits 0.
    result = {}
    started = threading.Event()

    def long_stream():
        try:
            finish = None
            for k in client.chat.completions.create(
                    model=NAME, messages=[{"role": "user", "content": "hi"}], max_tokens=1000,
                    temperature=0, stream=True):
                started.set()
                finish = k.choices[0].finish_reason if k.choices else finish
            result["finish"] = finish
        except Exception as e:  # noqa: BLE001
            result["error"] = repr(e)
        started.set()
    t = threading.Thread(target=long_stream)
    t.start()
    started.wait(timeout=30)
    server.send_signal(signal.SIGTERM)
    code = server.wait(timeout=30)
    t.join(timeout=30)
    check(code == 0, f"SIGTERM: exit code {code}")
    check(result.get("finish") in ("length", "stop"),
          f"SIGTERM: the stream under way ended with a finish_reason ({result})")
finally:
    if server.poll() is None:
        server.kill()
        server.wait()
    err = server.stderr.read()
    if failures:
        print("server stderr:\n" + err)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
