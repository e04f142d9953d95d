"""Who owns a solution's name when several files claim it: none of them.

The first file in path order used to keep it, so a file sorted first (`solutions/0_attacker/x.json`)
took another solution's name, its traces and `apply()`'s dispatch. The pipeline's plan and the
Python API's TraceSet both load through this rule (one engine).
"""
from __future__ import annotations

from typing import Dict, Optional, Set

from .io import Problem


class NameClaims:
    """The names files have claimed so far; a name claimed twice is nobody's from then on."""

    def __init__(self) -> None:
        self.first: Dict[str, str] = {}  # name -> the file that claimed it first
        self.squatted: Set[str] = set()  # names two files claimed

    def claim(self, name: str, where: str) -> Optional[Problem]:
        """None where `name` is `where`'s; else the dataset error of a second claim (the name is
        then nobody's: its first claimant is dropped too, by the caller)."""
        if name not in self.first and name not in self.squatted:
            self.first[name] = where
            return None
        first = self.first.pop(name, None) or "an earlier file"
        self.squatted.add(name)
        return Problem(where, f"duplicate solution name {name!r} (first in {first}): neither is used", None, "name")
