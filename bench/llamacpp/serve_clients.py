#!/usr/bin/python3
"""Serving throughput at C concurrent clients (issue 44: 8 clients x 64 tokens), the
same load for llama-server and `parallm serve`: each client sends K streamed
/v1/completions requests back to back (closed loop), each its own prompt (a different
slice of a text, so no request reuses another's cached prefix), max_tokens M at
temperature 0 with ignore_eos (llama-server's field; exactly M tokens each), counted from
the usage chunk as bench/serve_bench_load.py does. One untimed request warms the server.
Prints one JSON line. Usage: serve_clients.py NAME TEXT C K M -- SERVER_ARGV...
(SERVER_ARGV's "{port}" becomes a free port).
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from serve_bench_load import stream, summarize  # noqa: E402
from server import free_port, serving  # noqa: E402


def main():
    sep = sys.argv.index("--")
    name, text_path, clients, per_client, max_tokens = sys.argv[1:sep]
    clients, per_client, max_tokens = int(clients), int(per_client), int(max_tokens)
    port = free_port()
    argv = [a.replace("{port}", str(port)) for a in sys.argv[sep + 1:]]
    text = open(text_path, encoding="utf-8", errors="replace").read()

    def body(i):
        start = (i * 997) % max(1, len(text) - 400)
        return {"model": name, "prompt": text[start:start + 400], "max_tokens": max_tokens,
                "temperature": 0, "ignore_eos": True}

    with serving(argv, port, f"/tmp/serve_clients_{name}_{port}.log"):
        stream(port, "/v1/completions", dict(body(10_000), max_tokens=4))  # warmup
        outcomes = [None] * (clients * per_client)

        def client(c):
            for k in range(per_client):
                outcomes[c * per_client + k] = stream(port, "/v1/completions",
                                                      body(c * per_client + k))

        threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    s = summarize(outcomes, wall)
    print(json.dumps({"serve": name, "clients": clients, "requests_per_client": per_client,
                      "max_tokens": max_tokens, **s}))


if __name__ == "__main__":
    main()
