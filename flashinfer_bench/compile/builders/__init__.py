"""Per-language builders. They run inside the build's child process (see compile/child.py), so a
solution's import-time code, a crashing warm-up or a hung compiler cannot take the caller down."""
