"""Operating-system confinement primitives, used by runners (bench.confine) and builds (compile.child).

`landlock` (filesystem rules), `seccomp` (syscall filter), `ns` (namespaces, capabilities,
subreaper), `cgroup` (a pids cgroup), `policy` (which paths, which limits). Imports nothing of
ours, so every layer above may use it.
"""
