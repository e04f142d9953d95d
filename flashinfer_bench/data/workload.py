"""Workload: concrete axis values and how each input is produced."""
from __future__ import annotations

import uuid as uuidlib
from typing import Annotated, Dict, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_serializer


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


class SafetensorsInput(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["safetensors"] = "safetensors"
    path: str = Field(min_length=1)
    tensor_key: str = Field(min_length=1)


InputSpec = Annotated[Union[RandomInput, ScalarInput, SafetensorsInput], Field(discriminator="type")]


class Workload(BaseModel):
    model_config = ConfigDict(extra="allow")
    axes: Dict[str, int]
    inputs: Dict[str, InputSpec] = Field(default_factory=dict)
    uuid: str = Field(default_factory=lambda: str(uuidlib.uuid4()), min_length=1)
