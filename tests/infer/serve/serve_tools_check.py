"""Tool calls from `parallm serve`, with the official openai client.

A tiny GPT-2 (tests/infer/tiny_text_model.py, random weights) is served with
Qwen2.5's chat template (its Hermes-style `<tool_call>` instructions, the
fixture tests/infer/chat/fixtures/qwen25_instruct.json) and `--port 0`. Then:
  - tool_choice "required" (1 to 4 calls) and a named function (one), streamed
    and not: the client parses `tool_calls` whose names are offered and whose
    arguments validate against the function's parameters (jsonschema), content
    null and finish_reason "tool_calls"; the stream's delta.tool_calls pieces
    join into the same calls;
  - tool_choice "auto": the random model writes no call, so content comes back;
  - a follow-up turn (assistant tool_calls with content null, a tool message)
    is accepted;
  - bad tools, a bad parameters schema and a tool_choice naming no tool are
    400s naming the field, and the server answers a request after them.
Usage: serve_tools_check.py WORKDIR PARALLM"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from check_support import check, failures, openai_client  # noqa: E402
from tiny_text_model import build  # noqa: E402

import jsonschema  # noqa: E402
import openai  # noqa: E402

work, parallm = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
model_dir = os.path.join(work, "model")
build(model_dir, n_positions=2048, seed=5)  # the tool prompt is ~1000 tiny-BPE tokens
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "chat", "fixtures", "qwen25_instruct.json"), encoding="utf-8") as f:
    qwen25 = json.load(f)["chat_template"]
config_path = os.path.join(model_dir, "tokenizer_config.json")
with open(config_path, encoding="utf-8") as f:
    config = json.load(f)
config["chat_template"] = qwen25
with open(config_path, "w", encoding="utf-8") as f:
    json.dump(config, f)
NAME = "tiny"

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 12},
                          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "unit"]}
TIME = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "parameters": TIME}}]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
MSGS = [{"role": "user", "content": "What is the weather in Paris?"}]


def valid_call(name, arguments, want=None):
    """The call names an offered function (want, when given) and its
    arguments validate against that function's schema."""
    if name not in SCHEMAS or (want and name != want):
        return False
    try:
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def streamed(client, **kw):
    """Joins a stream's delta.tool_calls by index; returns (calls, content, finish)."""
    calls, content, finish = {}, "", None
    for chunk in client.chat.completions.create(stream=True, **kw):
        for c in chunk.choices:
            content += c.delta.content or ""
            for d in c.delta.tool_calls or []:
                call = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                call["id"] = d.id or call["id"]
                if d.function:
                    call["name"] += d.function.name or ""
                    call["arguments"] += d.function.arguments or ""
            finish = c.finish_reason or finish
    return [calls[i] for i in sorted(calls)], content, finish


server = subprocess.Popen([parallm, "serve", "--model", model_dir, "--port", "0",
                           "--served-model-name", NAME],
                          stdout=subprocess.PIPE, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
try:
    client, port = openai_client(server)
    # required may make up to 4 calls (Hermes blocks): room for all of them.
    base = dict(model=NAME, messages=MSGS, tools=TOOLS, max_tokens=500, temperature=0)
    named = {"type": "function", "function": {"name": "get_time"}}

    for choice in ("required", named):
        r = client.chat.completions.create(tool_choice=choice, **base)
        m, want = r.choices[0].message, None if choice == "required" else "get_time"
        calls = m.tool_calls or []
        check((len(calls) == 1 or (want is None and 1 <= len(calls) <= 4))
              and len({c.id for c in calls}) == len(calls)
              and all(c.type == "function" and c.id.startswith("call_")
                      and valid_call(c.function.name, c.function.arguments, want) for c in calls),
              f"tool_choice {json.dumps(choice)}: tool_calls whose arguments validate "
              f"({[c.function for c in calls]})")
        check(m.content is None and r.choices[0].finish_reason == "tool_calls",
              "content null, finish_reason tool_calls")
        s_calls, s_content, s_finish = streamed(client, tool_choice=choice, **base)
        check([(c["name"], c["arguments"]) for c in s_calls] ==
              [(c.function.name, c.function.arguments) for c in calls]
              and all((c["id"] or "").startswith("call_") for c in s_calls)
              and s_content == "" and s_finish == "tool_calls",
              f"tool_choice {json.dumps(choice)} streamed: delta.tool_calls join into the same call")

    r = client.chat.completions.create(**dict(base, max_tokens=12))
    check(r.choices[0].message.tool_calls is None and isinstance(r.choices[0].message.content, str),
          "tool_choice auto: free text without markers comes back as content")
    _, s_content, s_finish = streamed(client, **dict(base, max_tokens=12))
    check(s_content == r.choices[0].message.content and s_finish == r.choices[0].finish_reason,
          f"tool_choice auto streamed: the same content ({s_content!r} vs "
          f"{r.choices[0].message.content!r})")

    follow = MSGS + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather",
                                      "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"}]
    r = client.chat.completions.create(**dict(base, messages=follow, max_tokens=8))
    check(r.choices[0].finish_reason in ("stop", "length"),
          "a follow-up turn with the tool's result is accepted")

    bad = [({"tools": [{"type": "function", "function": {"name": "bad name"}}]},
            "tools[0].function.name"),
           ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
               "type": "object", "properties": {"x": {"type": "number", "multipleOf": 2}}}}}]},
            "tools[0].function.parameters"),
           ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
            "tool_choice.function.name"),
           ({"tools": {"type": "function"}}, "tools")]
    for extra, param in bad:
        try:
            client.chat.completions.create(**dict(dict(base, **extra), max_tokens=4))
            check(False, f"bad {param} refused")
        except openai.BadRequestError as e:
            check(e.status_code == 400 and (e.body or {}).get("param") == param,
                  f"bad {param}: 400 naming it ({e.message[:90]})")
    r = client.chat.completions.create(model=NAME, messages=MSGS, max_tokens=4)
    check(r.choices[0].finish_reason in ("stop", "length"), "the server serves after the 400s")
finally:
    server.terminate()
    server.wait(timeout=30)

print(f"tool calls: {len(failures)} failures")
sys.exit(1 if failures else 0)
