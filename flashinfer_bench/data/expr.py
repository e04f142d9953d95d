"""A small, safe interpreter for the expressions a dataset writes: constraints, flops, generator specs.

FlashInfer Trace constraints refer to axes and to input tensors
(`num_kv_indices == kv_indptr[-1].item()`, `sparse_indices.shape[0] == num_tokens`), so they cannot
be plain arithmetic over axes. They are dataset text, not code we trust, so they are interpreted
node by node rather than handed to `eval`:

- names are axes, input tensors (or their stand-ins) and a few functions (`len`, `min`, `max`,
  `abs`, `ceil`, `floor`, `log2`, `sqrt`, `int`, `float`); there are no builtins;
- attributes are limited to what a tensor needs (`shape`, `ndim`, `dtype`) and calls to
  `item`, `numel`, `size`, `dim`, `sum`, `min`, `max`, `all`, `any`;
- `**` and big integers are bounded (a 5000-digit power is refused, not computed), and every node
  checks a deadline, so a constraint cannot hang a run.

An input whose values are not known yet (a random tensor at validation time) is a `ShapeOnly`
stand-in: `.shape`, `len`, `.numel()` work, reading its values raises `NeedsValues`, which callers
turn into "checked on the actual inputs at run time".
"""
from __future__ import annotations

import ast
import functools
import math
import operator
import time
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Sequence, Tuple

__all__ = [
    "ExprError",
    "NeedsValues",
    "ShapeOnly",
    "evaluate",
    "names_in",
    "parse",
]

DEFAULT_TIME_LIMIT_S = 1.0
MAX_INT_BITS = 256          # results beyond +-2^256 are refused
MAX_POW_EXPONENT = 256
MAX_EXPR_CHARS = 4096       # a longer constraint or flops is refused before it is parsed
MAX_SEQUENCE = 1 << 16      # `[0] * n` and friends may not build longer lists


class ExprError(ValueError):
    """The expression is not allowed, or failed to evaluate (the message says which and why)."""


class NeedsValues(Exception):
    """The expression reads values of an input that are not known here (only its shape is)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class ShapeOnly:
    """An input known only by its shape (and dtype name): what validation knows of a random tensor."""

    def __init__(self, name: str, shape: Sequence[int], dtype: str = "") -> None:
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)

    def size(self, dim: Optional[int] = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise ExprError(f"len() of the 0-d input {self.name!r}")
        return self.shape[0]

    def __getattr__(self, attr: str) -> Any:  # item, sum, ... need the values
        raise NeedsValues(self.name)

    def __getitem__(self, key: Any) -> Any:
        raise NeedsValues(self.name)

    def __repr__(self) -> str:
        return f"<{self.name}: shape {self.shape}>"


def _ceil(x: Any) -> int:
    return math.ceil(x)


def _extreme(builtin: Callable[..., Any], method: str) -> Callable[..., Any]:
    """min/max: over one array or tensor, its own (vectorised) method, not a Python loop over
    its elements (a 10^8-element input would take minutes, unchecked by the deadline)."""

    def f(*args: Any) -> Any:
        if len(args) == 1 and not isinstance(args[0], (list, tuple)) and hasattr(args[0], "shape"):
            return _plain(getattr(args[0], method)())
        return builtin(*args)

    f.__name__ = builtin.__name__
    return f


def _floor(x: Any) -> int:
    return math.floor(x)


FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "len": len,
    "min": _extreme(min, "min"),
    "max": _extreme(max, "max"),
    "abs": abs,
    "ceil": _ceil,
    "floor": _floor,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "int": int,
    "float": float,
}
# attributes that may be read, and methods that may be called, on an input value
ATTRIBUTES: FrozenSet[str] = frozenset({"shape", "ndim", "dtype"})
METHODS: FrozenSet[str] = frozenset({"item", "numel", "size", "dim", "sum", "min", "max", "all", "any"})

_BINOPS: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_UNARY: Dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}


def _shape_problem(tree: ast.AST) -> Optional[str]:
    """Why the syntax is outside what we interpret (None when every node is allowed)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
                             ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Name,
                             ast.Subscript, ast.Slice, ast.Tuple, ast.List)):
            if isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
                return f"operator {type(node.op).__name__} is not allowed"
            if isinstance(node, ast.Compare) and any(type(o) not in _CMPOPS for o in node.ops):
                return "only ==, !=, <, <=, >, >= comparisons are allowed"
            if isinstance(node, ast.UnaryOp) and type(node.op) not in _UNARY:
                return f"operator {type(node.op).__name__} is not allowed"
            continue
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, bool)) or node.value is None:
                return f"constant {node.value!r} is not a number"
            continue
        if isinstance(node, ast.Attribute):
            if node.attr not in ATTRIBUTES | METHODS:
                return f"attribute .{node.attr} is not allowed (allowed: {sorted(ATTRIBUTES | METHODS)})"
            continue
        if isinstance(node, ast.Call):
            if node.keywords:
                return "keyword arguments are not allowed"
            f = node.func
            if isinstance(f, ast.Name) and f.id in FUNCTIONS:
                continue
            if isinstance(f, ast.Attribute) and f.attr in METHODS:
                continue
            return f"only {sorted(FUNCTIONS)} and the methods {sorted(METHODS)} may be called"
        return f"{type(node).__name__} is not allowed"
    return None


@functools.lru_cache(maxsize=4096)
def parse(expr: str) -> ast.Expression:
    """Parse and check an expression once; raises ExprError (with the reason) when not allowed."""
    if len(expr) > MAX_EXPR_CHARS:
        raise ExprError(f"longer than {MAX_EXPR_CHARS} characters ({len(expr)})")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"not an expression: {e.msg}") from e
    except (RecursionError, MemoryError) as e:  # the parser's own limits on nesting
        raise ExprError("not an expression: nested too deeply") from e
    why = _shape_problem(tree)
    if why:
        raise ExprError(why)
    return tree


def names_in(expr: str) -> FrozenSet[str]:
    """The free names an expression reads (functions excluded)."""
    tree = parse(expr)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in called)


def _check_number(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > MAX_INT_BITS:
        raise ExprError(f"an intermediate integer has {v.bit_length()} bits (more than {MAX_INT_BITS})")
    return v


class _Interpreter:
    def __init__(self, names: Mapping[str, Any], deadline: float) -> None:
        self.names = names
        self.deadline = deadline

    def run(self, node: ast.AST) -> Any:
        if time.monotonic() > self.deadline:
            raise ExprError("took longer than its time limit")
        method = getattr(self, f"_{type(node).__name__}")
        return method(node)

    def _Expression(self, n: ast.Expression) -> Any:
        return self.run(n.body)

    def _Constant(self, n: ast.Constant) -> Any:
        return n.value

    def _Name(self, n: ast.Name) -> Any:
        if n.id in self.names:
            return self.names[n.id]
        raise ExprError(f"unknown name {n.id!r}")

    def _Tuple(self, n: ast.Tuple) -> Any:
        return tuple(self.run(e) for e in n.elts)

    def _List(self, n: ast.List) -> Any:
        return [self.run(e) for e in n.elts]

    def _BinOp(self, n: ast.BinOp) -> Any:
        a, b = self.run(n.left), self.run(n.right)
        if isinstance(n.op, ast.Pow):
            if isinstance(b, (int, float)) and abs(b) > MAX_POW_EXPONENT:
                raise ExprError(f"exponent {b} is larger than {MAX_POW_EXPONENT}")
            if isinstance(a, int) and isinstance(b, int) and b > 0 and a.bit_length() * b > MAX_INT_BITS:
                raise ExprError(f"{a} ** {b} is larger than 2^{MAX_INT_BITS}")
        if isinstance(n.op, ast.Mult) and isinstance(a, int) and isinstance(b, int):
            if a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
                raise ExprError(f"a product has more than {MAX_INT_BITS} bits")
        seq_a, seq_b = isinstance(a, (list, tuple)), isinstance(b, (list, tuple))
        if seq_a or seq_b:  # `[0] * 2**40` would allocate before any deadline is checked
            size = 0
            if isinstance(n.op, ast.Mult):
                k = b if seq_a else a
                size = len(a if seq_a else b) * (k if isinstance(k, int) and k > 0 else 0)
            elif isinstance(n.op, ast.Add) and seq_a and seq_b:
                size = len(a) + len(b)
            if size > MAX_SEQUENCE:
                raise ExprError(f"a sequence of {size} elements (more than {MAX_SEQUENCE})")
        try:
            return _check_number(_BINOPS[type(n.op)](a, b))
        except ZeroDivisionError as e:
            raise ExprError("division by zero") from e
        except OverflowError as e:
            raise ExprError(f"overflow: {e}") from e

    def _UnaryOp(self, n: ast.UnaryOp) -> Any:
        return _UNARY[type(n.op)](self.run(n.operand))

    def _BoolOp(self, n: ast.BoolOp) -> Any:
        if isinstance(n.op, ast.And):
            v: Any = True
            for e in n.values:
                v = self.run(e)
                if not v:
                    return v
            return v
        v = False
        for e in n.values:
            v = self.run(e)
            if v:
                return v
        return v

    def _Compare(self, n: ast.Compare) -> Any:
        left = self.run(n.left)
        for op, right_node in zip(n.ops, n.comparators):
            right = self.run(right_node)
            ok = _CMPOPS[type(op)](left, right)
            if not _truth(ok):
                return False
            left = right
        return True

    def _IfExp(self, n: ast.IfExp) -> Any:
        return self.run(n.body) if _truth(self.run(n.test)) else self.run(n.orelse)

    def _Subscript(self, n: ast.Subscript) -> Any:
        value = self.run(n.value)
        key = self.run(n.slice)
        try:
            return value[key]
        except (IndexError, KeyError, TypeError) as e:
            raise ExprError(f"indexing failed: {type(e).__name__}: {e}") from e

    def _Slice(self, n: ast.Slice) -> Any:
        return slice(
            None if n.lower is None else self.run(n.lower),
            None if n.upper is None else self.run(n.upper),
            None if n.step is None else self.run(n.step),
        )

    def _Attribute(self, n: ast.Attribute) -> Any:
        value = self.run(n.value)
        if n.attr not in ATTRIBUTES:
            raise ExprError(f".{n.attr} must be called")
        if isinstance(value, (int, float, bool)):
            raise ExprError(f"a number has no .{n.attr}")
        v = getattr(value, n.attr)
        if n.attr == "shape":
            return tuple(int(s) for s in v)
        if n.attr == "dtype":
            return str(v).replace("torch.", "")
        return v

    def _Call(self, n: ast.Call) -> Any:
        args = [self.run(a) for a in n.args]
        f = n.func
        if isinstance(f, ast.Name):
            fn = FUNCTIONS[f.id]
            try:
                return _check_number(fn(*args))
            except (TypeError, ValueError, OverflowError) as e:
                raise ExprError(f"{f.id}() failed: {e}") from e
        assert isinstance(f, ast.Attribute)
        owner = self.run(f.value)
        if isinstance(owner, (int, float, bool)):
            if f.attr == "item" and not args:
                return owner
            raise ExprError(f"a number has no .{f.attr}()")
        method = _numpy_method(owner, f.attr) or getattr(owner, f.attr, None)
        if method is None:
            raise ExprError(f"a {type(owner).__name__} has no .{f.attr}()")
        try:
            out = method(*args)
        except (TypeError, ValueError, RuntimeError, IndexError) as e:
            raise ExprError(f".{f.attr}() failed: {e}") from e
        return _plain(out)


def _numpy_method(owner: Any, attr: str) -> Optional[Callable[..., Any]]:
    """torch's spelling of numel/size/dim on a numpy array (validation reads blobs with numpy)."""
    if type(owner).__module__ != "numpy" or not hasattr(owner, "shape"):
        return None
    if attr == "numel":
        return lambda: int(owner.size)
    if attr == "size":
        return lambda dim=None: tuple(owner.shape) if dim is None else int(owner.shape[dim])
    if attr == "dim":
        return lambda: int(owner.ndim)
    return None


def _plain(v: Any) -> Any:
    """A 0-d array/tensor result as a Python number, so comparisons give a plain bool."""
    if hasattr(v, "ndim") and getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        return v.item()
    return v


def _truth(v: Any) -> bool:
    try:
        return bool(v)
    except (ValueError, RuntimeError) as e:  # an array/tensor compared elementwise
        raise ExprError(f"the truth value of a {type(v).__name__} with several elements is ambiguous") from e


def evaluate(expr: str, names: Mapping[str, Any], time_limit_s: float = DEFAULT_TIME_LIMIT_S) -> Any:
    """The value of `expr` over `names` (axes as ints, inputs as tensors/arrays/ShapeOnly).

    Raises ExprError for anything not allowed or failing, NeedsValues when it reads the values of a
    ShapeOnly input."""
    tree = parse(expr)
    env = dict(FUNCTIONS)
    env.update(names)
    interp = _Interpreter(env, time.monotonic() + time_limit_s)
    try:
        return _plain(interp.run(tree))
    except (ExprError, NeedsValues):
        raise
    except RecursionError as e:
        raise ExprError("nested too deeply") from e
    except MemoryError as e:
        raise ExprError("needs too much memory") from e
    except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError, RuntimeError) as e:
        # e.g. `batch_size + [1]`, `-[1]`, `[1] < 2`: the expression is wrong, not the caller
        raise ExprError(f"{type(e).__name__}: {e}") from e


def truth(expr: str, names: Mapping[str, Any], time_limit_s: float = DEFAULT_TIME_LIMIT_S) -> bool:
    """`evaluate` as a bool (a constraint's verdict)."""
    return _truth(evaluate(expr, names, time_limit_s))


def describe_values(expr: str, names: Mapping[str, Any], limit: int = 6) -> str:
    """The values of the names an expression reads, for an error message (`a=3, kv_indptr[-1]=...`)."""
    out = []
    for name in sorted(names_in(expr)):
        if name not in names:
            continue
        v = names[name]
        if isinstance(v, (int, float, bool)):
            out.append(f"{name}={v}")
        elif isinstance(v, ShapeOnly):
            out.append(f"{name}.shape={v.shape}")
        else:
            shape = tuple(getattr(v, "shape", ()))
            desc = f"{name}.shape={shape}"
            try:
                flat = v.reshape(-1)
                n = int(flat.shape[0])
                if n:
                    head = [x.item() if hasattr(x, "item") else x for x in flat[: min(n, limit)]]
                    desc += f" {name}={head}{'...' if n > limit else ''}"
                    if n > limit:
                        desc += f" {name}[-1]={flat[-1].item()}"
            except (AttributeError, RuntimeError, TypeError, ValueError):
                pass
            out.append(desc)
    return ", ".join(out)


def key_of(expr: str) -> Tuple[str, ...]:
    """Sorted names of an expression (a stable key for caches)."""
    return tuple(sorted(names_in(expr)))
