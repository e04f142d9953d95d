"""Data types of the FlashInfer Trace format and their sizes.

Kept free of a torch import so the pipeline can plan a DAG without paying for torch.
"""
from __future__ import annotations

from enum import Enum
from typing import Any


class DType(str, Enum):
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    FLOAT8_E4M3FN = "float8_e4m3fn"
    FLOAT8_E5M2 = "float8_e5m2"
    FLOAT4_E2M1 = "float4_e2m1"
    INT64 = "int64"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    BOOL = "bool"

    def __str__(self) -> str:  # JSON and messages show the plain name
        return self.value

    @property
    def bits(self) -> int:
        return _BITS[self]

    @property
    def is_float(self) -> bool:
        return self.value.startswith("float") or self is DType.BFLOAT16

    @property
    def is_int(self) -> bool:
        return self.value.startswith("int")

    def to_torch(self) -> Any:
        """The torch dtype; float4_e2m1 maps to torch's packed uint8-backed type where present."""
        import torch

        name = {"float4_e2m1": "float4_e2m1fn_x2"}.get(self.value, self.value)
        if not hasattr(torch, name):
            raise TypeError(f"dtype {self.value} is not supported by torch {torch.__version__}")
        return getattr(torch, name)

    @classmethod
    def from_torch(cls, dtype: Any) -> "DType":
        name = str(dtype).removeprefix("torch.")
        name = {"float4_e2m1fn_x2": "float4_e2m1"}.get(name, name)
        return cls(name)


_BITS = {
    DType.FLOAT32: 32,
    DType.FLOAT16: 16,
    DType.BFLOAT16: 16,
    DType.FLOAT8_E4M3FN: 8,
    DType.FLOAT8_E5M2: 8,
    DType.FLOAT4_E2M1: 4,
    DType.INT64: 64,
    DType.INT32: 32,
    DType.INT16: 16,
    DType.INT8: 8,
    DType.BOOL: 8,
}
