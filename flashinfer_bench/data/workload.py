"""Workload: concrete axis values and how each input is produced."""
from __future__ import annotations

import uuid as uuidlib
from typing import Annotated, Any, Dict, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_serializer

from .fields import INT64_MAX, Int, NameStr


class RandomInput(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["random"] = "random"
    # The seeds pass dtype="float16"; upstream has no such field, so it is written only when set.
    dtype: Optional[str] = None

    @model_serializer(mode="wrap")
    def _ser(self, handler):
        d = handler(self)
        if d.get("dtype") is None:
            d.pop("dtype", None)
        return d


class ScalarInput(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["scalar"] = "scalar"
    value: Union[bool, int, float]

    @field_validator("value", mode="before")
    @classmethod
    def _not_text(cls, v: Any) -> Any:
        # lax mode would turn "1e-6" into a float; a quoted number is a mistake in a dataset
        if isinstance(v, (str, bytes)):
            raise ValueError(f"must be a number or a boolean, not the string {v!r}")
        return v


class SafetensorsInput(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["safetensors"] = "safetensors"
    path: str = Field(min_length=1)
    tensor_key: str = Field(min_length=1)


def _input_tag(v: Any) -> Optional[str]:
    """The input kind; an object without "type" (upstream's exclude_unset dumps) is told by its
    keys, as upstream's smart union would."""
    if isinstance(v, dict):
        t = v.get("type")
        if t is None:
            return "safetensors" if "path" in v else "scalar" if "value" in v else "random"
        return t if isinstance(t, str) else None
    return getattr(v, "type", None)


InputSpec = Annotated[
    Union[
        Annotated[RandomInput, Tag("random")],
        Annotated[ScalarInput, Tag("scalar")],
        Annotated[SafetensorsInput, Tag("safetensors")],
    ],
    Discriminator(
        _input_tag,
        custom_error_type="input_type",
        custom_error_message="input 'type' must be 'random', 'scalar' or 'safetensors'",
    ),
]


class Workload(BaseModel):
    model_config = ConfigDict(extra="allow")
    axes: Dict[str, Annotated[Int, Field(ge=0, le=INT64_MAX)]]  # upstream: NonNegativeInt
    inputs: Dict[str, InputSpec] = Field(default_factory=dict)
    # the run names files after it (one trace file per solution and workload)
    uuid: NameStr = Field(default_factory=lambda: str(uuidlib.uuid4()), min_length=1)
