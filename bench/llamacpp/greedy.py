#!/usr/bin/python3
"""llama.cpp's greedy tokens (issue 44's token-identity check): for each GGUF file, a
llama-server on it gives the prompt's token ids (/tokenize) and the first N ids it
generates at temperature 0, top-k 1 (/completion, return_tokens). A stop at the end of
text is kept (parallm stops there too). Writes one JSON object {file: {prompt_ids, ids,
text}} to OUT. Usage: greedy.py LLAMA_SERVER OUT.json PROMPT N THREADS FILE.gguf...
"""
import json
import os
import sys

from server import free_port, post, serving


def main():
    server, out, prompt, n, threads, files = (sys.argv[1], sys.argv[2], sys.argv[3],
                                              int(sys.argv[4]), sys.argv[5], sys.argv[6:])
    result = {}
    for f in files:
        port = free_port()
        argv = [server, "-m", f, "-t", threads, "-c", "512", "-np", "1",
                "--host", "127.0.0.1", "--port", port]
        with serving(argv, port, f"{out}.{os.path.basename(f)}.log"):
            prompt_ids = post(port, "/tokenize", {"content": prompt})["tokens"]
            r = post(port, "/completion", {
                "prompt": prompt, "n_predict": n, "temperature": 0, "top_k": 1,
                "return_tokens": True, "cache_prompt": False, "seed": 0})
        result[os.path.basename(f)] = {"prompt": prompt, "prompt_ids": prompt_ids,
                                       "ids": r["tokens"], "text": r["content"]}
        print(f"greedy {os.path.basename(f)}: {r['tokens']}", file=sys.stderr)
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
