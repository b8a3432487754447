"""Bad and unkind clients against a running `parallm serve`: the cases of
the issue's robustness list, shared by the conformance check
(serve_openai_check.py) and the AddressSanitizer check
(serve_asan_check.py). Malformed JSON, wrong types, negative max_tokens,
out-of-range values, an unknown model, a too-long prompt, a full queue, a
10 MB body (declared and chunked), unknown fields, an abrupt disconnect
mid-stream, a client that goes away while waiting for a non-streamed
answer, a slow sender and a slow reader: each gets the right status (or is
cancelled) and the server keeps serving. pool_is_whole() then says whether
every KV block is free again."""
import http.client
import json
import re
import socket
import struct
import time

HELLO = "hello world"


def metric(port, name):
    """One unlabelled value from /metrics."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return float(re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M).group(1))


def pool_is_whole(port, timeout=10.0):
    """True once no sequence runs or waits and no KV block is held (cancelled
    sequences leave at the engine's next step, so allow a moment)."""
    end = time.time() + timeout
    while True:
        busy = [metric(port, n) for n in ("parallm_num_requests_running",
                                          "parallm_num_requests_waiting",
                                          "parallm_kv_cache_blocks_used")]
        if busy == [0, 0, 0]:
            return True
        if time.time() > end:
            print("still busy (running, waiting, blocks used):", busy)
            return False
        time.sleep(0.05)


def run(port, check, name, context, queue_full_n):
    """The cases, against the server on port (model name, context length, and
    an n that overflows its --max-waiting). check(cond, what) records each."""
    def post(path, body, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", path, body=data,
                     headers=dict({"Content-Type": "application/json"}, **(headers or {})))
        resp = conn.getresponse()
        out = resp.status, resp.read()
        conn.close()
        return out

    def error_of(status, raw):
        try:
            e = json.loads(raw)["error"]
            return e if {"message", "type", "param", "code"} <= e.keys() else None
        except Exception:
            return None

    def healthy():
        s, b = post("/v1/completions", {"prompt": HELLO, "max_tokens": 20, "temperature": 0})
        return s == 200 and json.loads(b)["choices"][0]["text"] == hello_text

    s, b = post("/v1/completions", {"prompt": HELLO, "max_tokens": 20, "temperature": 0})
    hello_text = json.loads(b)["choices"][0]["text"] if s == 200 else None
    check(hello_text is not None, f"a plain request is answered ({s})")

    bad_cases = [
        ("malformed JSON", b'{"prompt": "hi", "max_tokens": ', 400, None),
        ("not an object", b'[1, 2]', 400, None),
        ("messages of the wrong type", {"messages": "hi"}, 400, "messages"),
        ("max_tokens a string", {"prompt": "hi", "max_tokens": "5"}, 400, "max_tokens"),
        ("negative max_tokens", {"prompt": "hi", "max_tokens": -3}, 400, "max_tokens"),
        ("temperature out of range", {"prompt": "hi", "temperature": 7}, 400, "temperature"),
        ("n = 0", {"prompt": "hi", "n": 0}, 400, "n"),
        ("stop of the wrong type", {"prompt": "hi", "stop": 5}, 400, "stop"),
        ("a role we do not know", {"messages": [{"role": "wizard", "content": "x"}]}, 400,
         "messages[0].role"),
        ("unknown model", {"model": "gpt-9", "prompt": "hi"}, 404, "model"),
        ("prompt too long", {"prompt": "hello world " * context, "max_tokens": 10}, 400, "prompt"),
        ("a JSON schema keyword we do not have",
         {"messages": [{"role": "user", "content": "hi"}], "response_format": {
             "type": "json_schema", "json_schema": {"name": "x", "schema": {
                 "type": "object", "properties": {"a": {"type": "integer", "multipleOf": 2}}}}}},
         400, "response_format.json_schema.schema"),
        ("a schema that is not an object",
         {"prompt": "hi", "structured_outputs": {"json": [1, 2]}}, 400, "structured_outputs.json"),
        ("a regex that does not parse", {"prompt": "hi", "structured_outputs": {"regex": "(a|b"}},
         400, "structured_outputs.regex"),
        ("a GBNF grammar that does not parse",
         {"prompt": "hi", "structured_outputs": {"grammar": "root ::= [a-"}}, 400,
         "structured_outputs.grammar"),
        ("a left-recursive GBNF grammar",
         {"prompt": "hi", "guided_grammar": "root ::= root \"a\" | \"b\""}, 400, "guided_grammar"),
        ("response_format of an unknown type",
         {"prompt": "hi", "response_format": {"type": "yaml"}}, 400, "response_format.type"),
        ("two constraints at once",
         {"prompt": "hi", "guided_regex": "a", "structured_outputs": {"regex": "b"}}, 400,
         "structured_outputs.regex"),
        ("tools that are not a list",
         {"messages": [{"role": "user", "content": "hi"}], "tools": {"type": "function"}}, 400,
         "tools"),
        ("a tool's parameters schema we do not have",
         {"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",
             "function": {"name": "f", "parameters": {"type": "number", "multipleOf": 2}}}]},
         400, "tools[0].function.parameters"),
        ("tool_choice naming no tool",
         {"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",
             "function": {"name": "f"}}], "tool_choice": {"type": "function",
                                                          "function": {"name": "g"}}},
         400, "tool_choice.function.name"),
        ("a tool call whose arguments are not JSON",
         {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {
             "name": "f", "arguments": "{oops"}}]}]}, 400,
         "messages[0].tool_calls[0].function.arguments"),
        ("queue full (n beyond --max-waiting)", {"prompt": "hi", "n": queue_full_n, "max_tokens": 2}, 429,
         None),
    ]
    for what, body, want, param in bad_cases:
        path = "/v1/chat/completions" if isinstance(body, dict) and "messages" in body \
            else "/v1/completions"
        s, raw = post(path, body)
        e = error_of(s, raw)
        check(s == want and e is not None and (param is None or e["param"] == param),
              f"{what}: {s} {e['message'] if e else raw[:120]!r}")
        check(healthy(), f"  ... and the server still answers after: {what}")
    s, raw = post("/v1/completions", {"prompt": "hello world " * context, "max_tokens": 10})
    check(f"maximum context length is {context}" in error_of(s, raw)["message"],
          "prompt too long names the context length")
    s, raw = post("/v1/completions", {"prompt": "hi", "structured_outputs": {"regex": "(a|b"}})
    check(error_of(s, raw) is not None and "')' expected" in error_of(s, raw)["message"],
          f"a bad regex is named: {error_of(s, raw)}")
    # A constrained request is answered within its grammar.
    s, raw = post("/v1/completions", {"prompt": HELLO, "max_tokens": 20, "temperature": 0,
                                      "structured_outputs": {"regex": "[a-z]{2,5} ?\\d{1,3}"}})
    text = json.loads(raw)["choices"][0]["text"] if s == 200 else None
    check(text is not None and re.fullmatch(r"[a-z]{2,5} ?\d{1,3}", text) is not None,
          f"a regex-constrained answer matches it ({text!r})")
    # A required tool call comes back as tool_calls (the model's template, or plain JSON).
    s, raw = post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 60, "temperature": 0,
        "tool_choice": "required", "tools": [{"type": "function", "function": {
            "name": "pick", "parameters": {"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"]}}}]})
    choice = json.loads(raw)["choices"][0] if s == 200 else {}
    calls = choice.get("message", {}).get("tool_calls") or [{}]
    check(choice.get("finish_reason") == "tool_calls" and
          calls[0].get("function", {}).get("name") == "pick" and
          0 <= json.loads(calls[0]["function"]["arguments"])["n"] <= 9,
          f"a required tool call comes back as tool_calls ({calls})")

    s, raw = post("/v1/completions", b'{"prompt": "' + b"a" * (10 << 20) + b'"}')
    check(s == 413 and error_of(s, raw) is not None, f"10 MB body: {s}")
    check(healthy(), "  ... and the server still answers after a 10 MB body")

    # The same sent chunked (no length declared): refused once past the limit.
    # The server stops reading there and closes, so the client may see a
    # reset instead of the 413 while it is still sending.
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    answer = b""
    try:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b"a" * (1 << 20)
        for i in range(10):
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    try:
        while True:
            got = sock.recv(65536)
            if not got:
                break
            answer += got
    except OSError:
        pass
    sock.close()
    status_line = answer.split(b"\r\n")[0] if answer else b"reset while sending"
    check(answer == b"" or answer.startswith(b"HTTP/1.1 413"),
          f"10 MB chunked body: {status_line.decode()}")
    check(healthy(), "  ... and the server still answers after a 10 MB chunked body")

    s, raw = post("/v1/completions", {"prompt": "hello", "max_tokens": 2, "temperature": 0,
                                      "user": "me", "frobnicate": {"a": [1, 2]},
                                      "logit_bias": {}})
    check(s == 200, "unknown fields are ignored")

    # An abrupt disconnect mid-stream: the sequence is cancelled, the server lives.
    long_req = json.dumps({"model": name, "messages": [{"role": "user", "content": "hello"}],
                           "max_tokens": 900, "temperature": 0, "stream": True}).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/json\r\nContent-Length: " + str(len(long_req)).encode() +
                 b"\r\n\r\n" + long_req)
    first = b""
    while b"data: " not in first:  # the headers, then the first event
        got = sock.recv(4096)
        if not got:
            break
        first += got
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
    sock.close()
    check(b"200 OK" in first and b"data: " in first, "disconnect: the stream had started")
    time.sleep(1.0)
    check(healthy(), "  ... and the server still answers after an abrupt disconnect")

    # A slow sender (the body in pieces over a second) while others are served.
    body = json.dumps({"prompt": "hello world", "max_tokens": 20, "temperature": 0}).encode()
    slow = socket.create_connection(("127.0.0.1", port), timeout=60)
    slow.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                 b"\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\n\r\n")
    for i in range(0, len(body), 8):
        slow.sendall(body[i:i + 8])
        time.sleep(0.1)
        if i == 16:
            check(healthy(), "  a request is served while a slow sender sends")
    resp = b""
    while True:
        piece = slow.recv(65536)
        if not piece:
            break
        resp += piece
    slow.close()
    got = json.loads(resp.split(b"\r\n\r\n", 1)[1])
    check(got["choices"][0]["text"] == hello_text, "slow sender: the right answer at the end")

    # A slow reader: reads its stream a few bytes at a time.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/v1/completions", body=json.dumps(
        {"prompt": "hello world", "max_tokens": 20, "temperature": 0, "stream": True}),
        headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    raw = b""
    while True:
        piece = resp.read(64)
        if not piece:
            break
        raw += piece
        time.sleep(0.02)
    conn.close()
    events = [e[len("data: "):] for e in raw.decode().split("\n\n") if e.startswith("data: ")]
    check(events[-1] == "[DONE]" and "".join(json.loads(e)["choices"][0]["text"]
                                             for e in events[:-1]) == hello_text,
          "slow reader: the whole stream, then [DONE]")


    # A client that goes away while waiting for a non-streamed answer: its
    # sequences are cancelled (seen on its socket within a poll), not run to
    # max_tokens; the request log records it as 499.
    body = json.dumps({"prompt": HELLO, "n": 4, "max_tokens": context - 16,
                       "temperature": 0}).encode()
    tokens_before = metric(port, "parallm_generation_tokens_total")
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/json\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\n\r\n" + body)
    time.sleep(0.05)
    sock.close()
    check(pool_is_whole(port), "non-streamed disconnect: its blocks are free again")
    made = metric(port, "parallm_generation_tokens_total") - tokens_before
    check(made < 4 * (context - 16), f"  ... and it was cancelled early ({made:.0f} of "
          f"{4 * (context - 16)} tokens)")
    check(healthy(), "  ... and the server still answers after it")
