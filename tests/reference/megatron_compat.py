#!/usr/bin/python3
"""Megatron indexed datasets, both ways, against the published format.

The reader and writer below are written here from Megatron-LM's documented
layout (megatron/core/datasets/indexed_dataset.py: _IndexWriter/_IndexReader,
with Megatron's dtype code table); Megatron itself is not installed.
  1. `parallm tokenize --format megatron` output read by the reference reader:
     its header checks pass, and the tokens and document indices are what
     Megatron's preprocess_data.py --append-eod gives for the same documents
     (byte-level tokenizer: token = byte, EOD = 256).
  2. Files written by numpy in Megatron's layout, for every integer dtype and
     with documents of several sequences (as --split-sentences makes), read by
     parallm (megatron_dump read): same lengths, pointers, document indices,
     tokens, and the stream the DataLoader yields.
  3. parallm's writer (megatron_dump write) for every integer dtype, read back
     by the reference reader.
Usage: megatron_compat.py PARALLM MEGATRON_DUMP WORKDIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

HEADER = b"MMIDIDX\x00\x00"
CODES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
         6: np.float64, 7: np.float32, 8: np.uint16}
EOD = 256


def reference_read(prefix):
    """Megatron's _IndexReader header check and arrays, then the sequences."""
    with open(prefix + ".idx", "rb") as f:
        assert f.read(9) == HEADER, f"bad header, cannot read: {prefix}.idx"
        version = struct.unpack("<Q", f.read(8))[0]
        assert version == 1, f"bad version, cannot read: {prefix}.idx"
        code = struct.unpack("<B", f.read(1))[0]
        dtype = CODES[code]
        seq_count = struct.unpack("<Q", f.read(8))[0]
        doc_count = struct.unpack("<Q", f.read(8))[0]
        offset = f.tell()
    assert offset == 34
    buf = np.memmap(prefix + ".idx", mode="r", order="C")
    lengths = np.frombuffer(buf, dtype=np.int32, count=seq_count, offset=offset)
    pointers = np.frombuffer(buf, dtype=np.int64, count=seq_count, offset=offset + lengths.nbytes)
    docs = np.frombuffer(buf, dtype=np.int64, count=doc_count,
                         offset=offset + lengths.nbytes + pointers.nbytes)
    assert len(buf) == offset + lengths.nbytes + pointers.nbytes + docs.nbytes, "index size"
    assert docs[0] == 0 and docs[-1] == seq_count, docs
    data = np.memmap(prefix + ".bin", mode="r", order="C")
    seqs = [np.frombuffer(data, dtype=dtype, count=int(n), offset=int(p)).tolist()
            for n, p in zip(lengths, pointers)]
    return code, lengths.tolist(), pointers.tolist(), docs.tolist(), seqs


def reference_write(prefix, documents, dtype):
    """Megatron's IndexedDatasetBuilder: add_item per sequence, end_document
    per document; the .idx as _IndexWriter lays it out."""
    code = [c for c, t in CODES.items() if t == dtype][0]
    lengths, docs = [], [0]
    with open(prefix + ".bin", "wb") as f:
        for doc in documents:
            for seq in doc:
                f.write(np.array(seq, dtype=dtype).tobytes(order="C"))
                lengths.append(len(seq))
            docs.append(len(lengths))
    itemsize = np.dtype(dtype).itemsize
    pointers = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) * itemsize
    with open(prefix + ".idx", "wb") as f:
        f.write(HEADER)
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", code))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(docs)))
        f.write(np.array(lengths, dtype=np.int32).tobytes(order="C"))
        f.write(np.array(pointers, dtype=np.int64).tobytes(order="C"))
        f.write(np.array(docs, dtype=np.int64).tobytes(order="C"))
    return lengths, pointers.tolist(), docs


def main():
    parallm, dump, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    # 1. parallm tokenize --format megatron -> reference reader.
    texts = ["The cat sat.\n", "", "Ünïcode dög\nline two", "x" * 300]
    paths = []
    for i, t in enumerate(texts):
        p = os.path.join(work, f"doc{i}.txt")
        with open(p, "w", encoding="utf-8") as f:
            f.write(t)
        paths.append(p)
    out = os.path.join(work, "tok")
    subprocess.run([parallm, "tokenize", *paths, "--out", out, "--format", "megatron",
                    "--val-fraction", "0"], check=True, stdout=subprocess.DEVNULL)
    code, lengths, pointers, docs, seqs = reference_read(out + "_train")
    want = [list(t.encode("utf-8")) + [EOD] for t in texts if t]  # --append-eod; empty skipped
    check(code == 8, f"tokenize: dtype code {code} is uint16 (8)")
    check(seqs == want, "tokenize: sequences are the documents' bytes + EOD")
    check(docs == list(range(len(want) + 1)), f"tokenize: document indices {docs}")
    check(pointers == [2 * sum(len(s) for s in want[:i]) for i in range(len(want))],
          "tokenize: pointers are byte offsets")

    # 2. numpy-written Megatron files -> parallm.
    rng = np.random.default_rng(0)
    for code, dtype in CODES.items():
        if dtype in (np.float32, np.float64):
            continue
        info = np.iinfo(dtype)
        hi = min(int(info.max), 50000)
        lo = max(int(info.min), -100) if info.min < 0 else 0
        documents = [[rng.integers(lo, hi, size=int(rng.integers(0, 9))).tolist()
                      for _ in range(int(rng.integers(1, 4)))] for _ in range(6)]
        prefix = os.path.join(work, f"np_{dtype.__name__}")
        lengths, pointers, docs = reference_write(prefix, documents, dtype)
        got = json.loads(subprocess.run([dump, "read", prefix], check=True,
                                        capture_output=True, text=True).stdout)
        flat = [seq for doc in documents for seq in doc]
        check(got["dtype"] == code and got["lengths"] == lengths and
              got["pointers"] == pointers and got["document_indices"] == docs,
              f"numpy {dtype.__name__}: parallm reads the same index ({len(flat)} sequences, "
              f"{len(docs) - 1} documents)")
        check(got["sequences"] == flat, f"numpy {dtype.__name__}: same tokens per sequence")
        check(got["stream"] == [t for s in flat for t in s],
              f"numpy {dtype.__name__}: the DataLoader streams the sequences in order")

        # 3. parallm's writer -> reference reader, same dtype.
        docs_txt = os.path.join(work, f"docs_{dtype.__name__}.txt")
        one_per_doc = [[t for s in doc for t in s] for doc in documents]
        with open(docs_txt, "w") as f:
            f.write("".join(" ".join(map(str, d)) + "\n" for d in one_per_doc))
        pprefix = os.path.join(work, f"px_{dtype.__name__}")
        subprocess.run([dump, "write", pprefix, str(code), docs_txt], check=True)
        rcode, _, _, rdocs, rseqs = reference_read(pprefix)
        check(rcode == code and rseqs == one_per_doc and rdocs == list(range(7)),
              f"parallm writer {dtype.__name__}: the reference reader sees the same documents")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
