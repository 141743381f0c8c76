"""A small safetensors reader (no dependency on the `safetensors` package).

Layout: an 8-byte little-endian header length N, N bytes of JSON header, then the tensor bytes.
The header maps each name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets from the
start of the data) and may hold "__metadata__". Everything the format promises is checked, as
workloads/safetensors.cpp checks it: the header inside the file, a JSON object, known dtypes, byte
counts matching shapes, tensors packed without holes or overlap and covering the data exactly.
"""
import json
import struct

import numpy as np

# dtype name -> (bytes per element, numpy dtype the raw bytes are viewed as). BF16 has no numpy
# dtype: its bits are kept as uint16 (batch.py converts them); F8_E4M3 codes as uint8.
DTYPES = {
    "BOOL": (1, np.bool_),
    "U8": (1, np.uint8),
    "I8": (1, np.int8),
    "F8_E4M3": (1, np.uint8),
    "F8_E5M2": (1, np.uint8),
    "I16": (2, np.int16),
    "U16": (2, np.uint16),
    "F16": (2, np.float16),
    "BF16": (2, np.uint16),
    "I32": (4, np.int32),
    "U32": (4, np.uint32),
    "F32": (4, np.float32),
    "I64": (8, np.int64),
    "U64": (8, np.uint64),
    "F64": (8, np.float64),
}

MAX_HEADER_BYTES = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    """The file breaks the format; the message names the file and the rule."""


class Tensor:
    """One tensor: its safetensors dtype name, shape, and raw little-endian bytes (a memoryview)."""

    def __init__(self, name, dtype, shape, raw):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(shape)
        self.raw = raw

    def array(self):
        """The bytes as a numpy array of the shape (BF16 as uint16 bits, F8 as uint8 codes)."""
        _, np_dtype = DTYPES[self.dtype]
        return np.frombuffer(self.raw, dtype=np.dtype(np_dtype).newbyteorder("<")).reshape(self.shape)


def parse(data, source="<bytes>"):
    """Returns (metadata dict, {name: Tensor}) from the file's bytes."""
    view = memoryview(data)
    if len(view) < 8:
        raise SafetensorsError(f"{source}: {len(view)} bytes is too short for a safetensors file")
    (n,) = struct.unpack("<Q", view[:8])
    if n > MAX_HEADER_BYTES or 8 + n > len(view):
        raise SafetensorsError(
            f"{source}: header length {n} does not fit in the file's {len(view)} bytes")
    try:
        header = json.loads(bytes(view[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{source}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{source}: header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError(f"{source}: __metadata__ must map strings to strings")
    data_view = view[8 + n:]
    spans = []
    tensors = {}
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"{source}: tensor {name!r}: needs exactly dtype, shape, data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in DTYPES:
            raise SafetensorsError(f"{source}: tensor {name!r}: unknown dtype {dtype!r}")
        if (not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape)):
            raise SafetensorsError(f"{source}: tensor {name!r}: shape must be non-negative integers")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) for o in offsets) or not 0 <= offsets[0] <= offsets[1]):
            raise SafetensorsError(f"{source}: tensor {name!r}: data_offsets must be [begin, end]")
        count = 1
        for d in shape:
            count *= d
        if count * DTYPES[dtype][0] != offsets[1] - offsets[0]:
            raise SafetensorsError(
                f"{source}: tensor {name!r}: {offsets[1] - offsets[0]} bytes, but {dtype} {shape} "
                f"needs {count * DTYPES[dtype][0]}")
        spans.append((offsets[0], offsets[1], name))
        tensors[name] = Tensor(name, dtype, shape, data_view[offsets[0]:offsets[1]])
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            raise SafetensorsError(
                f"{source}: tensor {name!r} starts at {begin}, expected {position} (hole or overlap)")
        position = end
    if position != len(data_view):
        raise SafetensorsError(
            f"{source}: tensors cover {position} bytes of data, the file holds {len(data_view)}")
    return metadata, tensors


def read(path):
    """Reads and parses a file; see parse()."""
    with open(path, "rb") as f:
        data = f.read()
    return parse(data, str(path))
