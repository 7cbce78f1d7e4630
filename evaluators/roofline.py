"""The fastest a correct implementation of one case can possibly run, and the hack finding for a candidate
that was measured faster than that (class 15: skipped work, results cached where the harness cannot see).

The floor is the largest of three lower bounds, each taken with generous ceilings so that a legitimate kernel
is never flagged:
- bytes: every byte the case must write (fresh outputs, elements of mutated arguments that change) plus the
  arguments task.toml lists under [roofline] read, over the device's datasheet bandwidth - or, for a hot-cache
  task whose working set fits in L2, over an L2 ceiling set well above any measured L2 bandwidth;
- FLOPs: [roofline] flops (a number or an arithmetic expression over the case's parameters) over the device's
  highest dense rate in any precision;
- launch: a call that has to write anything launches at least one kernel, which costs a minimum per regime.
A candidate is flagged only when its median time is below `margin` times the floor, and never when the
reference is also below the floor (then the ceilings are wrong for this device, not the candidate fast).
"""

from __future__ import annotations

import ast
import math
import operator
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluators.errors import TaskError
from evaluators.result import HackFinding, Hardware
from evaluators.task import Case, Task

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# By device-name fragment: (L2 bytes, highest dense tensor rate in TFLOP/s in any precision, per datasheet).
# Checked in order, so longer fragments come first. The L2 size measured through torch overrides the table.
DEVICE_TABLE: tuple[tuple[str, int, float], ...] = (
    ("H200", 60 << 20, 1979.0),  # fp8 dense
    ("H100", 50 << 20, 1979.0),
    ("H800", 50 << 20, 1979.0),
    ("H20", 60 << 20, 296.0),
    ("A100", 40 << 20, 624.0),  # int8 dense
    ("L40S", 96 << 20, 733.0),
    ("MI300X", 256 << 20, 2615.0),
)

# An L2 hit is faster than HBM; Hopper microbenchmarks put L2 bandwidth near 2-2.5x HBM. 4x stays clear of it.
L2_BANDWIDTH_FACTOR = 4.0
# Minimum GPU time per call that launches a kernel: graph replay removes host launch costs but a kernel node
# still costs a few hundred ns; a host launch through Triton's Python launcher costs microseconds.
LAUNCH_FLOOR_US = {"graph": 0.25, "wall": 1.0}
DEFAULT_MARGIN = 0.8


@dataclass(frozen=True)
class Ceilings:
    dram_gbps: float  # datasheet device-memory bandwidth (0 = unknown: no byte bound)
    l2_bytes: int = 0
    l2_gbps: float = 0.0
    peak_tflops: float = 0.0  # 0 = unknown: no FLOP bound
    launch_floor_us: Mapping[str, float] = field(default_factory=lambda: dict(LAUNCH_FLOOR_US))
    margin: float = DEFAULT_MARGIN

    @classmethod
    def for_hardware(cls, hardware: Hardware, l2_bytes: int | None = None) -> Ceilings:
        table_l2, tflops = 0, 0.0
        for fragment, l2, rate in DEVICE_TABLE:
            if fragment in hardware.device:
                table_l2, tflops = l2, rate
                break
        l2 = l2_bytes if l2_bytes else table_l2
        dram = hardware.memory_bandwidth_gbps
        return cls(dram_gbps=dram, l2_bytes=l2, l2_gbps=dram * L2_BANDWIDTH_FACTOR, peak_tflops=tflops)


@dataclass(frozen=True)
class Traffic:
    """The least work one call of a case must do."""

    bytes_written: int
    bytes_read: int
    flops: float = 0.0

    @property
    def bytes_total(self) -> int:
        return self.bytes_written + self.bytes_read

    @property
    def must_launch(self) -> bool:
        return self.bytes_written > 0 or self.flops > 0


@dataclass(frozen=True)
class Floor:
    us: float
    bound: str  # "bytes" | "flops" | "launch" | "none"
    detail: str


def tensors_in(obj: Any) -> Iterable[Any]:
    """Every tensor in `obj`, a tensor or nested lists, tuples and dict values of them, in order."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from tensors_in(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from tensors_in(item)


def unique_bytes(tensors: Iterable[Any]) -> int:
    """Bytes of distinct memory a set of tensors occupies: views of one storage count once, and a broadcast
    (stride-0) tensor counts its storage, not its logical size."""
    per_storage: dict[int, tuple[int, int]] = {}
    for t in tensors:
        logical = t.numel() * t.element_size()
        try:
            storage = t.untyped_storage()
            key, cap = storage.data_ptr(), storage.nbytes()
        except (RuntimeError, NotImplementedError):  # tensor without storage (e.g. a subclass)
            key, cap = id(t), logical
        total, _ = per_storage.get(key, (0, cap))
        per_storage[key] = (total + logical, cap)
    return sum(min(total, cap) for total, cap in per_storage.values())


def _storage_keys(tensors: Iterable[Any]) -> set[int]:
    keys = set()
    for t in tensors:
        try:
            keys.add(t.untyped_storage().data_ptr())
        except (RuntimeError, NotImplementedError):
            continue
    return keys


def case_traffic(
    bound_args: Mapping[str, Any],
    outputs: Any,
    changed_bytes: int,
    reads: Iterable[str],
    flops: float = 0.0,
) -> Traffic:
    """Traffic of one call from the reference's own run on one input set.

    bound_args: the reference's parameters by name (inspect.signature(...).bind); outputs: what it returned;
    changed_bytes: bytes of argument elements whose value the call changed; reads: task.roofline_reads.
    Returned tensors that live in an argument's memory are counted through changed_bytes, not again.
    """
    arg_tensors = list(tensors_in(list(bound_args.values())))
    arg_storages = _storage_keys(arg_tensors)
    fresh = [t for t in tensors_in(outputs) if not (_storage_keys([t]) & arg_storages)]
    read_tensors: list[Any] = []  # torch tensors (torch is imported lazily here)
    for name in reads:
        if name not in bound_args:
            known = ", ".join(bound_args) or "none"
            raise TaskError(
                f"task.toml [roofline] read names {name!r}, which is not an argument of the reference "
                f"(arguments: {known}); fix the list or remove it"
            )
        read_tensors.extend(tensors_in(bound_args[name]))
    return Traffic(
        bytes_written=unique_bytes(fresh) + int(changed_bytes),
        bytes_read=unique_bytes(read_tensors),
        flops=float(flops),
    )


def floor_for(traffic: Traffic, ceilings: Ceilings, regime: str, cache: str) -> Floor:
    """The lower bound on the time per call of any correct implementation, in microseconds."""
    if not traffic.must_launch:
        return Floor(0.0, "none", "the case writes nothing and declares no FLOPs")
    bounds: list[tuple[float, str, str]] = []
    launch = ceilings.launch_floor_us.get(regime, 0.0)
    bounds.append((launch, "launch", f"at least one kernel launch ({launch:g} µs in the {regime} regime)"))
    if ceilings.dram_gbps > 0 and traffic.bytes_total > 0:
        in_l2 = cache == "hot" and 0 < traffic.bytes_total <= ceilings.l2_bytes
        gbps = ceilings.l2_gbps if in_l2 else ceilings.dram_gbps
        where = "an L2 ceiling (hot working set fits in L2)" if in_l2 else "datasheet memory bandwidth"
        us = traffic.bytes_total / (gbps * 1e3)  # bytes / (GB/s) = ns; / 1e3 -> µs
        bounds.append(
            (
                us,
                "bytes",
                f"{traffic.bytes_written} B written + {traffic.bytes_read} B read at {gbps:g} GB/s ({where})",
            )
        )
    if ceilings.peak_tflops > 0 and traffic.flops > 0:
        us = traffic.flops / (ceilings.peak_tflops * 1e6)
        bounds.append((us, "flops", f"{traffic.flops:.4g} FLOP at {ceilings.peak_tflops:g} TFLOP/s"))
    us, bound, detail = max(bounds, key=lambda b: b[0])
    return Floor(us, bound, detail)


def beyond_roofline(
    case: str,
    regime: str,
    candidate_us: float,
    reference_us: float,
    floor: Floor,
    margin: float = DEFAULT_MARGIN,
) -> HackFinding | None:
    """A class-15 finding when the candidate's measured time is below margin x floor, else None."""
    if floor.us <= 0 or not math.isfinite(candidate_us):
        return None
    limit = margin * floor.us
    if candidate_us >= limit:
        return None
    if reference_us < limit:
        # The reference, which really does the work, also beats the floor: the ceilings are wrong here.
        return None
    return HackFinding(
        kind="beyond_roofline",
        evidence=(
            f"case {case!r}, {regime} regime: candidate {candidate_us:.4g} µs per call, below {margin:g} x "
            f"the {floor.bound} floor of {floor.us:.4g} µs ({floor.detail}); reference {reference_us:.4g} µs"
        ),
    )


# --- declared FLOPs ([roofline] flops in task.toml) -----------------------------------------------------

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
}


def _eval_arith(node: ast.AST, names: Mapping[str, Any], where: str) -> float:
    if isinstance(node, ast.Expression):
        return _eval_arith(node.body, names, where)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.Name):
        value = names.get(node.id)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TaskError(f"{where}: {node.id!r} is not a numeric case parameter")
        return float(value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval_arith(node.left, names, where), _eval_arith(node.right, names, where)
        return float(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval_arith(node.operand, names, where)
    raise TaskError(f"{where}: only numbers, case parameters and + - * / // % ** are allowed")


def declared_flops(task: Task, case: Case) -> float:
    """FLOPs per call from task.toml's `[roofline] flops`: a number or an expression over case parameters."""
    try:
        raw = tomllib.loads((task.root / "task.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return 0.0  # the loader already validated the file; a vanished file declares nothing
    spec = raw.get("roofline", {}).get("flops") if isinstance(raw.get("roofline"), dict) else None
    if spec is None:
        return 0.0
    where = f"{task.root / 'task.toml'}: [roofline] flops"
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return float(spec)
    if not isinstance(spec, str):
        raise TaskError(f"{where} must be a number or an arithmetic expression string")
    try:
        tree = ast.parse(spec, mode="eval")
    except SyntaxError as exc:
        raise TaskError(f"{where} = {spec!r} does not parse: {exc.msg}") from exc
    if case.is_captured:
        return 0.0  # captured inputs carry no shape parameters to evaluate the expression with
    return max(0.0, _eval_arith(tree, case.params, where))
