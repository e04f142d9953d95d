"""Confinement of untrusted solution code (issue 9): Landlock, seccomp, namespaces, limits, checks.

Runner side: `landlock`, `seccomp`, `ns` (namespaces, capabilities), `policy` (paths, settings),
`guard` (integrity checks around an evaluation), `channel` (authenticated replies). Supervisor
side (torch-free): `supervise` (refusal, memory watchdog, reply checks, plausibility).
`flashinfer_bench.bench.confine` puts the runner side together.
"""
