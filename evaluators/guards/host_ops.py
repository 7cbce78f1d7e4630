"""What one host-side PyTorch operation does, decided from the ATen op it is (not from the Python name it was
called by): the one policy behind the runtime op recorder (guards.op_recorder) and the static checks'
judgement of tensor methods and torch functions (evaluators.static).

    metadata     sizes, strides, one scalar read (`.item()`)
    allocation   fresh buffers (torch.empty*, zeros, full ...)
    view         an alias of the input: view, reshape of a contiguous tensor, transpose, unsqueeze, expand ...
    copy         the input's values, copied: contiguous / clone / copy_ / a float<->float or int->int cast
    fill         fill_ / zero_ (allowed on buffers the same call allocated)
    compute      everything else: pointwise and reduction math, gathers, casts that round (float->int) or
                 compare (->bool), lazy negation / conjugation bits, moves between devices

View and copy are host *preparation*: they decide layout and dtype, never the answer, and they run inside the
timed call. A cast that lowers precision is a copy too, and judged by the task's precision class (a float32
task: precision_downgrade) and by the tolerance table, like any other candidate's rounding.

Statically a method's op is found by running it on small meta tensors (no data, no device) under a dispatch
mode that records the ATen ops it issues, once per method name and literal arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class HostOp(str, Enum):
    METADATA = "metadata"
    ALLOCATION = "allocation"
    VIEW = "view"
    COPY = "copy"
    FILL = "fill"
    COMPUTE = "compute"


PREPARATION = frozenset({HostOp.VIEW, HostOp.COPY})
ALLOWED = frozenset({HostOp.METADATA, HostOp.ALLOCATION, HostOp.VIEW, HostOp.COPY})

ALLOCATION_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "empty_permuted",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "scalar_tensor",
        "lift_fresh",
    }
)
METADATA_OPS = frozenset(
    {
        "_local_scalar_dense",
        "item",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "size",
        "stride",
        "storage_offset",
        "is_same_size",
        "_has_compatible_shallow_copy_type",
        "is_contiguous",
        "dim",
        "numel",
    }
)
FILL_OPS = frozenset({"fill_", "zero_", "resize_"})
# ATen ops whose result holds the input's values, in another layout or dtype (casts are judged below).
COPY_OPS = frozenset({"_to_copy", "clone", "copy_", "_copy_from", "_copy_from_and_resize", "lift_fresh_copy"})
# Views whose schema does not say so (reshape's copy path returns one).
UNANNOTATED_VIEWS = frozenset({"_unsafe_view", "_reshape_alias"})
# Views that carry a lazy negation or conjugation: materialising them is arithmetic.
MATH_BIT_OPS = frozenset(
    {"_neg_view", "_conj", "conj", "resolve_neg", "resolve_conj", "_conj_physical", "conj_physical"}
)


@dataclass(frozen=True)
class OpVerdict:
    kind: HostOp
    detail: str = ""  # "cast bfloat16 -> float32", "a float -> integer cast rounds"
    lowers_to: torch.dtype | None = None  # a float cast to a narrower float: its target

    @property
    def allowed(self) -> bool:
        return self.kind in ALLOWED


def classify(func: Any, args: tuple = (), kwargs: dict | None = None) -> OpVerdict:
    """What one dispatched ATen op (an OpOverload) does with these arguments."""
    kwargs = kwargs or {}
    name = func.overloadpacket.__name__
    tags = {str(t).rsplit(".", 1)[-1] for t in getattr(func, "tags", ())}
    if name in METADATA_OPS:
        return OpVerdict(HostOp.METADATA)
    if name in ALLOCATION_OPS:
        return OpVerdict(HostOp.ALLOCATION)
    if name in FILL_OPS:
        return OpVerdict(HostOp.FILL)
    if name in MATH_BIT_OPS:
        return OpVerdict(HostOp.COMPUTE, "a lazy negation / conjugation")
    if getattr(func, "is_view", False) or name in UNANNOTATED_VIEWS or "inplace_view" in tags:
        return OpVerdict(HostOp.VIEW)
    if name in COPY_OPS or "view_copy" in tags:
        return _copy_verdict(name, args, kwargs)
    kind = "reduction" if "reduction" in tags else "pointwise" if "pointwise" in tags else ""
    return OpVerdict(HostOp.COMPUTE, kind)


def _copy_verdict(name: str, args: tuple, kwargs: dict) -> OpVerdict:
    if name == "copy_" and len(args) >= 2:
        dst, src = args[0], args[1]
        target_dtype, target_device = getattr(dst, "dtype", None), getattr(dst, "device", None)
    else:
        src = args[0] if args else None
        target_dtype = kwargs.get("dtype") or getattr(src, "dtype", None)
        target_device = kwargs.get("device") or getattr(src, "device", None)
    source_dtype, source_device = getattr(src, "dtype", None), getattr(src, "device", None)
    if not isinstance(src, torch.Tensor):
        return OpVerdict(HostOp.COPY)
    if target_device is not None and torch.device(target_device) != source_device:
        return OpVerdict(HostOp.COMPUTE, f"moves data {source_device} -> {torch.device(target_device)}")
    if source_dtype is None or target_dtype is None or source_dtype == target_dtype:
        return OpVerdict(HostOp.COPY)
    problem = cast_problem(source_dtype, target_dtype)
    detail = f"cast {_short(source_dtype)} -> {_short(target_dtype)}"
    if problem:
        return OpVerdict(HostOp.COMPUTE, f"{detail}: {problem}")
    lowers = target_dtype if lowers_precision(source_dtype, target_dtype) else None
    return OpVerdict(HostOp.COPY, detail, lowers)


def cast_problem(source: torch.dtype, target: torch.dtype) -> str:
    """Why a cast computes something (empty when it only converts values): rounding to an integer, a
    comparison with zero, complex arithmetic."""
    if source == target:
        return ""
    if source.is_complex or target.is_complex:
        return "complex values"
    if target == torch.bool:
        return "a cast to bool compares with zero"
    if source.is_floating_point and not target.is_floating_point:
        return "a float -> integer cast rounds"
    return ""


def lowers_precision(source: torch.dtype, target: torch.dtype) -> bool:
    return source.is_floating_point and target.is_floating_point and target.itemsize < source.itemsize


def below_float32(dtype: torch.dtype | None) -> bool:
    return dtype is not None and dtype.is_floating_point and dtype.itemsize < 4


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# --- static: what a tensor method / torch function does ----------------------------------------------------


@dataclass(frozen=True)
class CallVerdict:
    """What a call does on every kind of input the probe tried: `kind` is compute only when it computes for
    every probed dtype (a cast's meaning depends on the source dtype, which only the runtime knows)."""

    kind: HostOp
    detail: str = ""
    lowers_float32: bool = False  # from a float32 source it casts below float32

    @property
    def allowed(self) -> bool:
        return self.kind in ALLOWED or self.kind == HostOp.FILL


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.verdicts: list[OpVerdict] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.verdicts.append(classify(func, args, kwargs or {}))
        return func(*args, **(kwargs or {}))


_PROBE_DTYPES = (torch.float32, torch.bfloat16, torch.int64)
_RANK = {
    HostOp.METADATA: 0,
    HostOp.ALLOCATION: 1,
    HostOp.VIEW: 2,
    HostOp.FILL: 3,
    HostOp.COPY: 4,
    HostOp.COMPUTE: 5,
}


class _NeedsArguments(Exception):
    pass


def _probe_tensor(dtype: torch.dtype) -> torch.Tensor:
    # Transposed: non-contiguous, so that .contiguous() / .flatten() show the copy they can make.
    return torch.empty((4, 2), dtype=dtype, device="meta").t()


def _probe(call: Callable[[torch.Tensor], Any]) -> list[OpVerdict] | None:
    """The worst op the call issues for each probe dtype it runs on; None when it runs on none (it needs
    the tensor's values: .tolist(), .numpy()). A call that fails after dispatching (meta.cpu() copies, then
    finds no data) is judged by what it dispatched."""
    worst: list[OpVerdict] = []
    for dtype in _PROBE_DTYPES:
        recorder = _Recorder()
        tensor = _probe_tensor(dtype)
        try:
            with recorder:
                call(tensor)
        except TypeError as exc:
            if "argument" in str(exc):  # missing / wrong arguments, not "can't convert a meta tensor"
                raise _NeedsArguments from exc
            if not recorder.verdicts:
                continue
        except Exception:
            if not recorder.verdicts:
                continue  # not defined for this dtype (requires_grad_ on integers)
        ops = recorder.verdicts or [OpVerdict(HostOp.METADATA)]
        worst.append(max(ops, key=lambda v: _RANK[v.kind]))
    return worst or None


def _summarise(per_dtype: list[OpVerdict]) -> CallVerdict:
    lowers = any(v.lowers_to is not None and below_float32(v.lowers_to) for v in per_dtype[:1])
    if all(v.kind == HostOp.COMPUTE for v in per_dtype):
        detail = next((v.detail for v in per_dtype if v.detail), "")
        return CallVerdict(HostOp.COMPUTE, detail, lowers)
    best = max((v for v in per_dtype if v.kind != HostOp.COMPUTE), key=lambda v: _RANK[v.kind])
    return CallVerdict(best.kind, best.detail, lowers)


def _aten_packet(name: str) -> Any:
    try:
        return getattr(torch.ops.aten, name)
    except (AttributeError, RuntimeError):
        return None


def _from_schema(packet: Any) -> CallVerdict:
    """An ATen op judged without running it: its name and tags, or (for a composite the probe could not
    run) whether every overload returns an alias of its input (reshape, chunk: a view or a layout copy)."""
    overloads = [getattr(packet, o) for o in packet.overloads()]
    if not overloads:
        return CallVerdict(HostOp.COMPUTE)
    name = packet.__name__
    if name not in MATH_BIT_OPS and all(_returns_alias(o) for o in overloads):
        return CallVerdict(HostOp.VIEW)
    verdict = classify(overloads[0])
    return CallVerdict(verdict.kind, verdict.detail)


def _returns_alias(overload: Any) -> bool:
    returns = overload._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


def _is_composite(packet: Any) -> bool:
    for overload in packet.overloads():
        op = getattr(packet, overload)
        try:
            composite = torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")
        except RuntimeError:  # a TorchScript-only overload (aten::to.prim_Device): never dispatched
            continue
        if not composite:
            return False
    return True


@functools.cache
def tensor_method(name: str, literal_args: tuple = ()) -> CallVerdict | None:
    """What `tensor.<name>(*literal_args)` does; None when torch.Tensor has no such method or the probe
    could not tell (the runtime recorder decides then). `literal_args` are the call's arguments when all
    are literals (dtypes, strings, None, bools); otherwise the call is probed without arguments."""
    if name.startswith("__") or not callable(getattr(torch.Tensor, name, None)):
        return None
    return _judge(name, lambda t, *a: getattr(t, name)(*a), literal_args)


@functools.cache
def torch_function(name: str, literal_args: tuple = ()) -> CallVerdict | None:
    """What `torch.<name>(tensor, *literal_args)` does (None: not an ATen op that the probe could tell)."""
    function = getattr(torch, name, None)
    if not callable(function) or _aten_packet(name) is None:
        return None
    return _judge(name, lambda t, *a: function(t, *a), literal_args)


def _judge(name: str, call: Callable[..., Any], literal_args: tuple) -> CallVerdict | None:
    packet = _aten_packet(name)
    if name in METADATA_OPS:
        return CallVerdict(HostOp.METADATA)
    if packet is not None and not _is_composite(packet):
        return _from_schema(packet)
    attempts: list[tuple] = [literal_args] if literal_args else [(), ("meta_tensor",)]
    for args in attempts:

        def attempt(t: torch.Tensor, a: tuple = args) -> Any:
            return call(t, *_materialise(a))

        try:
            per_dtype = _probe(attempt)
        except _NeedsArguments:
            continue
        if per_dtype is None:  # .tolist(), .numpy(), .cuda() without a GPU: data or a device, not layout
            return CallVerdict(HostOp.COMPUTE, "needs the tensor's values on the host")
        return _summarise(per_dtype)
    return _from_schema(packet) if packet is not None else None


def _materialise(args: tuple) -> tuple:
    # A tensor-typed argument (type_as, view_as): another dtype, so that a cast shows.
    return tuple(
        torch.empty((2, 4), dtype=torch.float16, device="meta") if a == "meta_tensor" else a for a in args
    )
