"""The header of a GGUF model file: its key/value metadata (architecture, context length,
embedding size, pooling, quantisation), read without llama.cpp so a model can be described and
checked before it is loaded."""

from __future__ import annotations

import mmap
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

POOLING_NAMES = {"none": 0, "mean": 1, "cls": 2, "last": 3, "rank": 4}
# Encoder (bidirectional) architectures pool by mean when the file does not say; every other
# architecture is a decoder whose last token has seen the whole text.
_ENCODER_ARCHS = {
    "bert",
    "nomic-bert",
    "nomic-bert-moe",
    "jina-bert-v2",
    "jina-bert-v3",
    "modern-bert",
    "neo-bert",
    "t5encoder",
    "xlm-roberta",
    "roberta",
    "gemma-embedding",
}

# general.file_type → name (llama.h `enum llama_ftype`).
_FILE_TYPES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
}
_QUANT_IN_NAME = re.compile(r"(?i)(?:^|[-_.])((?:I?Q\d(?:_[A-Z0-9]+)*)|BF16|F16|F32)$")

GGUF_MAGIC = b"GGUF"


class GgufFormatError(ValueError):
    """The file is not a readable GGUF model (wrong magic, unsupported version, truncated)."""


@dataclass(frozen=True)
class GgufInfo:
    """The key/value metadata of a GGUF file. Arrays are kept as their length only."""

    path: Path
    version: int
    n_tensors: int
    metadata: dict[str, Any] = field(repr=False)
    size: int = 0

    @property
    def arch(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", ""))

    def arch_value(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(f"{self.arch}.{key}", default)

    @property
    def context_length(self) -> int:
        return int(self.arch_value("context_length", 0) or 0)

    @property
    def embedding_length(self) -> int:
        return int(self.arch_value("embedding_length", 0) or 0)

    @property
    def causal(self) -> bool:
        declared = self.arch_value("attention.causal")
        if declared is not None:
            return bool(declared)
        return self.arch not in _ENCODER_ARCHS

    @property
    def quantisation(self) -> str:
        ft = self.metadata.get("general.file_type")
        if isinstance(ft, int) and ft in _FILE_TYPES:
            return _FILE_TYPES[ft]
        m = _QUANT_IN_NAME.search(self.path.stem)
        return m.group(1).upper() if m else ""

    @property
    def declared_pooling(self) -> int | None:
        value = self.arch_value("pooling_type")
        return int(value) if isinstance(value, int) else None

    def pooling(self) -> int:
        """The pooling the model declares; when it declares none, last token for decoder
        architectures (Qwen3, Llama…) and mean for encoders (BERT…)."""
        declared = self.declared_pooling
        if declared is not None and declared != POOLING_NAMES["none"]:
            return declared
        return POOLING_NAMES["mean"] if not self.causal else POOLING_NAMES["last"]


_U64 = struct.Struct("<Q")
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_gguf_info(path: str | os.PathLike[str]) -> GgufInfo:
    """Read a GGUF file's header metadata. Raises GgufFormatError (or OSError) with a clear reason."""
    p = Path(path)
    with open(p, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(4)
        if head != GGUF_MAGIC:
            raise GgufFormatError(f"{p.name} is not a GGUF file (it does not start with 'GGUF')")
        if size < 24:
            raise GgufFormatError(f"{p.name} is truncated (a GGUF header needs 24 bytes, the file has {size})")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _parse_header(p, mm, size)


def _parse_header(p: Path, mm: mmap.mmap, size: int) -> GgufInfo:
    pos = 4

    def take(n: int) -> int:
        nonlocal pos
        start = pos
        if n < 0 or pos + n > size:
            raise GgufFormatError(f"{p.name} is truncated or corrupt (its header runs past the end of the file)")
        pos += n
        return start

    def u32() -> int:
        return struct.unpack_from("<I", mm, take(4))[0]

    def u64() -> int:
        return struct.unpack_from("<Q", mm, take(8))[0]

    def string() -> str:
        n = u64()
        start = take(n)
        return bytes(mm[start : start + n]).decode("utf-8", errors="replace")

    def value(vtype: int) -> Any:
        nonlocal pos
        if vtype in _SCALARS:
            fmt = _SCALARS[vtype]
            return struct.unpack_from(fmt, mm, take(struct.calcsize(fmt)))[0]
        if vtype == 8:
            return string()
        if vtype == 9:
            itype, count = u32(), u64()
            if itype in _SCALARS:
                take(count * struct.calcsize(_SCALARS[itype]))
            elif itype == 8:  # e.g. a 151k-token vocabulary: skip it in a tight loop
                off, unpack = pos, _U64.unpack_from
                for _ in range(count):
                    if off + 8 > size:
                        raise GgufFormatError(
                            f"{p.name} is truncated or corrupt (its header runs past the end of the file)"
                        )
                    off += 8 + unpack(mm, off)[0]
                if off > size:
                    raise GgufFormatError(
                        f"{p.name} is truncated or corrupt (its header runs past the end of the file)"
                    )
                pos = off
            elif itype == 9:
                raise GgufFormatError(f"{p.name} has nested arrays in its metadata, which GGUF does not allow")
            else:
                raise GgufFormatError(f"{p.name} has an unknown metadata type {itype}")
            return ("array", count)
        raise GgufFormatError(f"{p.name} has an unknown metadata type {vtype} (corrupt header?)")

    version = u32()
    if version not in (2, 3):
        raise GgufFormatError(f"{p.name} is GGUF version {version}; only versions 2 and 3 are supported")
    n_tensors, n_kv = u64(), u64()
    if n_kv > 1_000_000 or n_tensors > 10_000_000:
        raise GgufFormatError(f"{p.name} has an implausible header (corrupt file?)")
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(u32())
    return GgufInfo(path=p, version=version, n_tensors=n_tensors, metadata=meta, size=size)
