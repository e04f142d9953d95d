"""Checks around an evaluation of untrusted solution code (issue 9).

Runner side: `guard` (integrity checks around an evaluation), `channel` (authenticated replies).
Supervisor side (torch-free): `supervise` (refusal, memory watchdog, reply checks, plausibility).
The OS primitives (Landlock, seccomp, namespaces, limits) live in `flashinfer_bench.sandbox`;
`flashinfer_bench.bench.confine` puts the runner side together.
"""
