"""Structured output from `parallm serve`, with the official openai client.

A tiny GPT-2 (tests/infer/tiny_text_model.py, random weights) is served with
`parallm serve --port 0`. Then:
  - 100 random JSON schemas (seeded: nested objects, arrays with maxItems,
    enums, integers, numbers, booleans, nulls, anyOf, required and optional
    properties, strings with maxLength), chat and completions alternately,
    half streamed, 8 at a time: every answer ends with finish_reason "stop"
    and validates against its schema (the jsonschema package);
  - while they run, free requests in the same batches give exactly the
    greedy text they gave alone (the mask is that sequence's only);
  - response_format json_object, and vLLM's structured_outputs regex,
    grammar (GBNF) and choice, each answered within its constraint;
  - a bad schema is a 400 naming the keyword, and a normal request after it
    is answered; /metrics counts the masked steps.
Usage: serve_structured_check.py WORKDIR PARALLM"""
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from check_support import check, failures, openai_client  # noqa: E402
from tiny_text_model import build  # noqa: E402
import serve_robustness  # noqa: E402

import jsonschema  # noqa: E402
import openai  # noqa: E402

work, parallm = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
build(model_dir, n_positions=1024, seed=5)
NAME = "tiny"
MAX_TOKENS = 900


def random_schema(rng, depth=0):
    """A schema whose every answer is bounded (strings, arrays, numbers)."""
    kinds = ["string", "integer", "number", "boolean", "enum", "null", "array", "anyOf",
             "pattern", "range"]
    if depth < 2:
        kinds += ["object"] * 3
    kind = rng.choice(kinds)
    if kind == "string":
        return {"type": "string", "maxLength": rng.randint(0, 8)}
    if kind == "pattern":
        return {"type": "string", "pattern": r"^[a-z]{2,5}-\d{1,3}(\.[A-Z])?$"}
    if kind == "range":
        lo = rng.randint(-50, 50)
        return {"type": "integer", "minimum": lo, "maximum": lo + rng.randint(0, 300)}
    if kind in ("integer", "number", "boolean", "null"):
        return {"type": kind}
    if kind == "enum":
        return {"enum": rng.sample(["red", "green", "blue", 7, 2.5, None, True, "a b"],
                                   rng.randint(1, 4))}
    if kind == "array":
        lo = rng.randint(0, 2)
        return {"type": "array", "items": random_schema(rng, depth + 1), "minItems": lo,
                "maxItems": lo + rng.randint(0, 2)}
    if kind == "anyOf":
        return {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 4}]}
    names = rng.sample(["id", "name", "tags", "score", "ok", "kind", "child", "items"],
                       rng.randint(1, 4))
    props = {n: random_schema(rng, depth + 1) for n in names}
    required = [n for n in names if rng.random() < 0.6]
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


def top_schema(rng):
    """The top level is an object, as OpenAI's strict mode requires."""
    while True:
        s = random_schema(rng)
        if s.get("type") == "object":
            return s


server = subprocess.Popen([parallm, "serve", "--model", model_dir, "--port", "0",
                           "--served-model-name", NAME, "--max-running", "8",
                           "--max-waiting", "64"],
                          stdout=subprocess.PIPE, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
try:
    client, port = openai_client(server)
    msgs = [{"role": "user", "content": "give me json"}]

    def free(i):
        """An unconstrained greedy request."""
        return client.completions.create(model=NAME, prompt=f"the quick brown fox {i}",
                                         max_tokens=24, temperature=0).choices[0].text

    alone = [free(i) for i in range(4)]

    def answer(i, schema):
        """(text, finish_reason) of schema i: chat or completions, streamed or not."""
        rf = {"type": "json_schema",
              "json_schema": {"name": f"s{i}", "schema": schema, "strict": True}}
        common = dict(model=NAME, max_tokens=MAX_TOKENS, temperature=1.0, seed=i)
        stream = i % 2 == 1
        if i % 4 < 2:
            r = client.chat.completions.create(messages=msgs, response_format=rf, stream=stream,
                                               **common)
            if not stream:
                return r.choices[0].message.content, r.choices[0].finish_reason
            text, finish = "", None
            for k in r:
                if k.choices:
                    text += k.choices[0].delta.content or ""
                    finish = k.choices[0].finish_reason or finish
            return text, finish
        r = client.completions.create(prompt="json:", extra_body={"response_format": rf},
                                      stream=stream, **common)
        if not stream:
            return r.choices[0].text, r.choices[0].finish_reason
        text, finish = "", None
        for k in r:
            if k.choices:
                text += k.choices[0].text
                finish = k.choices[0].finish_reason or finish
        return text, finish

    rng = random.Random(45)
    schemas = [top_schema(rng) for _ in range(100)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(answer, i, s) for i, s in enumerate(schemas)]
        mixed = [pool.submit(free, i) for i in range(4)]
        results = [f.result() for f in futures]
        mixed_text = [f.result() for f in mixed]
    valid = 0
    for i, ((text, finish), schema) in enumerate(zip(results, schemas)):
        try:
            jsonschema.validate(json.loads(text), schema)
            ok = finish == "stop"
        except Exception as e:  # noqa: BLE001
            ok = False
            print(f"schema {i}: {e!s:.200}\n  {json.dumps(schema)}\n  {text!r:.300} ({finish})")
        valid += ok
    check(valid == 100, f"100 random schemas, half streamed: {valid} answers validate")
    check(mixed_text == alone,
          "free requests batched with constrained ones give their greedy text alone")

    r = client.chat.completions.create(model=NAME, messages=msgs, max_tokens=MAX_TOKENS,
                                       temperature=0.7, seed=3,
                                       response_format={"type": "json_object"})
    text = r.choices[0].message.content
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    check(r.choices[0].finish_reason == "stop" and isinstance(obj, dict),
          f"json_object: a JSON object ({text[:80]!r}...)")

    def constrained(extra, stream=False):
        r = client.completions.create(model=NAME, prompt="the lazy dog", max_tokens=64,
                                      temperature=1.0, seed=11, extra_body=extra, stream=stream)
        if stream:
            return "".join(k.choices[0].text for k in r if k.choices)
        return r.choices[0].text

    pattern = r"(\+\d{1,2} )?[a-z]{3,6}-\d{2}(\.\d)?"
    for stream in (False, True):
        text = constrained({"structured_outputs": {"regex": pattern}}, stream)
        check(re.fullmatch(pattern, text) is not None,
              f"regex ({'streamed' if stream else 'not streamed'}): {text!r}")
    gbnf = ('root ::= "(" item ("," item){0,2} ")"\n'
            'item ::= [0-9]{1,2} | "x" | "\\u4f60"\n')
    text = constrained({"structured_outputs": {"grammar": gbnf}})
    check(re.fullmatch(r"\((\d{1,2}|x|你)(,(\d{1,2}|x|你)){0,2}\)", text) is not None,
          f"GBNF grammar: {text!r}")
    text = constrained({"guided_choice": ["alpha", "beta", "gamma"]})
    check(text in ("alpha", "beta", "gamma"), f"guided_choice: {text!r}")

    try:
        client.chat.completions.create(
            model=NAME, messages=msgs, max_tokens=8,
            response_format={"type": "json_schema", "json_schema": {
                "name": "bad", "schema": {"type": "object", "patternProperties": {}}}})
        check(False, "a bad schema is refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "patternProperties" in str(e),
              f"a bad schema is a 400 naming the keyword: {str(e)[:160]}")
    check(free(0) == alone[0], "the server answers normally after the bad schema")
    steps = serve_robustness.metric(port, "parallm_structured_output_masked_steps_total")
    mask_s = serve_robustness.metric(port, "parallm_structured_output_mask_seconds_total")
    check(steps > 1000, f"/metrics counts masked steps ({steps:.0f}, {mask_s:.3f} s of masks)")
    check(serve_robustness.pool_is_whole(port), "every KV block is free afterwards")
finally:
    server.terminate()
    server.wait(timeout=30)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
