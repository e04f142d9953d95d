"""FlashInfer-Bench 0.1.2's JSON file helpers (`flashinfer_bench.data.json_utils`), same names,
arguments and results, so a 0.1.2 user's scripts run unchanged.

Ours differ only where it makes a file safer: whole-file writes are atomic (readers see the old or
the new file, never a torn one) and an append is one write call.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, List, Type, TypeVar, Union

from pydantic import BaseModel

from ..atomic import atomic_write_text

M = TypeVar("M", bound=BaseModel)
PathLike = Union[str, Path]


def save_json_file(object: BaseModel, path: PathLike) -> None:  # noqa: A002 - 0.1.2's parameter name
    """Write one model as an indented JSON file (parent directories created).

    Every field is written (0.1.2 writes only the fields that were set): our models fill some
    fields from factories (a workload's uuid, an evaluation's timestamp), which must not change
    on a reload; 0.1.2 reads the full form too."""
    atomic_write_text(path, object.model_dump_json(indent=2) + "\n")


def load_json_file(model_cls: Type[M], path: PathLike) -> M:
    """Read one model from a JSON file. Raises FileNotFoundError, or pydantic's ValidationError
    when the content does not fit `model_cls`."""
    return model_cls.model_validate_json(Path(path).read_text(encoding="utf-8"))


def _lines(objects: Iterable[BaseModel]) -> str:
    return "".join(o.model_dump_json() + "\n" for o in objects)


def save_jsonl_file(objects: Iterable[BaseModel], path: PathLike) -> None:
    """Write models one per line, replacing the file (parent directories created)."""
    atomic_write_text(path, _lines(objects))


def load_jsonl_file(model_cls: Type[M], path: PathLike) -> List[M]:
    """Read one model per non-blank line. Lines are split on "\\n" only, so a JSON string holding
    U+2028 stays one line. Raises FileNotFoundError or ValidationError as `load_json_file`."""
    text = Path(path).read_text(encoding="utf-8")
    return [model_cls.model_validate_json(line) for line in text.split("\n") if line.strip()]


def append_jsonl_file(objects: Iterable[BaseModel], path: PathLike) -> None:
    """Append models one per line (file and parent directories created). A last line without its
    newline gets one first, so the new lines never join it. The text goes out in one write on an
    O_APPEND descriptor: concurrent appenders do not interleave within a line."""
    path = Path(path)
    text = _lines(objects)
    if not text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        size = os.fstat(fd).st_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            text = "\n" + text
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
