"""Minimal safetensors reader/writer on struct + numpy (no `safetensors` package).

File layout: u64 little-endian header length N, N bytes of JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the raw little-endian data; offsets are relative to the end of the header.
Invariant: load() returns plain numpy arrays; BF16 is widened to float32 (exact:
bf16 bits are the top half of an f32), and save() narrows float32 to BF16 with
round-to-nearest-even only for the names the caller asks for.
"""
import json
import struct

import numpy as np

# safetensors dtype name -> numpy dtype of the stored element.
_STORED = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NAME_OF = {
    np.dtype("float64"): "F64",
    np.dtype("float32"): "F32",
    np.dtype("float16"): "F16",
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
    np.dtype("int16"): "I16",
    np.dtype("int8"): "I8",
    np.dtype("uint8"): "U8",
    np.dtype("bool"): "BOOL",
}


def bf16_bits_to_f32(bits):
    """uint16 array of bf16 bit patterns -> float32 array (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """float32 array -> uint16 bf16 bits, round to nearest even; NaN stays NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def read_header(path):
    """Returns (header dict without __metadata__, metadata dict, data start offset)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: too short for a safetensors file")
        (n,) = struct.unpack("<Q", raw)
        header = json.loads(f.read(n).decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    return header, meta, 8 + n


def load(path, keep_bf16_bits=False):
    """Returns {name: np.ndarray}. BF16 comes back as float32 unless keep_bf16_bits."""
    header, _, start = read_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        blob = f.read()
    out = {}
    for name, info in header.items():
        dtype_name = info["dtype"]
        if dtype_name not in _STORED:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {dtype_name}")
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        stored = _STORED[dtype_name]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if end - begin != count * stored.itemsize or end > len(blob):
            raise ValueError(f"{path}: tensor {name!r} has inconsistent data_offsets")
        arr = np.frombuffer(blob, dtype=stored, count=count, offset=begin).reshape(shape).copy()
        if dtype_name == "BF16" and not keep_bf16_bits:
            arr = bf16_bits_to_f32(arr)
        out[name] = arr
    return out


def save(path, tensors, metadata=None, bf16_names=()):
    """Writes {name: array-like} in name order. Names in bf16_names are stored as BF16
    (the array must be float); everything else keeps its numpy dtype."""
    bf16_names = set(bf16_names)
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        if name in bf16_names:
            data, dtype_name = f32_to_bf16_bits(arr), "BF16"
        else:
            if arr.dtype not in _NAME_OF:
                raise ValueError(f"tensor {name!r}: unsupported numpy dtype {arr.dtype}")
            dtype_name = _NAME_OF[arr.dtype]
            data = arr.astype(_STORED[dtype_name], copy=False)
        raw = np.ascontiguousarray(data).tobytes()
        header[name] = {
            "dtype": dtype_name,
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * ((8 - len(head) % 8) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for raw in chunks:
            f.write(raw)
