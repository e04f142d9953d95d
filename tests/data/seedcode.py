"""Code blocks of the user's seed documents, taken verbatim from the markdown at test time."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

_FENCE = re.compile(r"^```(\w*)\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")


def code_blocks(md: Path) -> List[Tuple[str, str, str]]:
    """(nearest heading above, language, code) for every fenced block, in document order."""
    out = []
    heading, lang, buf, inside = "", "", [], False
    for line in md.read_text(encoding="utf-8").splitlines():
        if inside:
            if line.strip() == "```":
                out.append((heading, lang, "\n".join(buf) + "\n"))
                inside, buf = False, []
            else:
                buf.append(line)
            continue
        m = _FENCE.match(line)
        if m:
            inside, lang = True, m.group(1)
            continue
        h = _HEADING.match(line)
        if h:
            heading = h.group(1).strip()
    return out


def block(md: Path, heading_prefix: str, lang: str = "python") -> str:
    """The single code block of `lang` under the heading that starts with `heading_prefix`."""
    found = [c for h, l, c in code_blocks(md) if h.startswith(heading_prefix) and l == lang]
    if len(found) != 1:
        raise LookupError(f"{md.name}: {len(found)} {lang} blocks under {heading_prefix!r}")
    return found[0]
