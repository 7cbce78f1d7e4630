"""Snapshots of state a candidate must leave alone, compared after each candidate call.

- HarnessSnapshot: the identity of the timers, synchronize, CUDA events/graphs, do_bench, torch's comparison
  functions and every loaded evaluator module's functions (class 6: monkey-patching the harness).
- precision_flags: TF32 switches, float32 matmul precision, default dtype, autocast (class 10).
- ModuleFingerprint: the candidate module's globals, function defaults and attributes (class 7: state kept
  across calls).
- torch mode stacks: a TorchFunctionMode / TorchDispatchMode left pushed after a call intercepts the harness.

The snapshots keep strong references to the original objects, so an id can never be recycled by a new object.
"""

from __future__ import annotations

import builtins
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from types import FunctionType, MappingProxyType, ModuleType
from typing import Any

_GUARDED_TYPES = (type, ModuleType)


def _guarded(value: object) -> bool:
    return callable(value) or isinstance(value, _GUARDED_TYPES)


def _describe(value: object) -> str:
    code = getattr(value, "__code__", None)
    if code is not None:
        return f"{getattr(value, '__qualname__', '?')} from {code.co_filename}:{code.co_firstlineno}"
    return f"{type(value).__name__} object"


def _namespaces() -> list[tuple[str, Mapping[str, Any]]]:
    """(label, namespace) pairs the harness relies on; modules not imported yet are skipped."""
    out: list[tuple[str, Mapping[str, Any]]] = [("time", vars(time)), ("builtins", vars(builtins))]
    out.append(("sys", {k: getattr(sys, k) for k in ("setprofile", "settrace", "addaudithook", "modules")}))
    torch = sys.modules.get("torch")
    if torch is not None:
        out += [("torch", vars(torch)), ("torch.Tensor", vars(torch.Tensor))]
        out.append(("torch._C.TensorBase", vars(torch._C.TensorBase)))
        for name in (
            "torch.cuda",
            "torch.testing",
            "torch.nn.functional",
            "torch.cuda.graphs",
            "torch.utils._python_dispatch",
            "torch.overrides",
        ):
            module = sys.modules.get(name)
            if module is not None:
                out.append((name, vars(module)))
        cuda = sys.modules.get("torch.cuda")
        if cuda is not None:
            for cls in ("Event", "CUDAGraph", "Stream"):
                obj = getattr(cuda, cls, None)
                if isinstance(obj, type):
                    out.append((f"torch.cuda.{cls}", vars(obj)))
    for name in ("triton", "triton.testing", "triton.runtime.jit", "triton.runtime.autotuner"):
        module = sys.modules.get(name)
        if module is not None:
            out.append((name, vars(module)))
    for name, module in list(sys.modules.items()):
        if (name == "evaluators" or name.startswith("evaluators.")) and isinstance(module, ModuleType):
            out.append((name, vars(module)))
    return out


class HarnessSnapshot:
    """Identity of every callable / class / module in the harness's namespaces, taken before the candidate."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Mapping[str, Any], dict[str, object]]] = {}
        self._class_keys: dict[str, frozenset[str]] = {}
        self._modules = {n: m for n, m in sys.modules.items() if _harness_module(n)}
        for label, namespace in _namespaces():
            self._entries[label] = (namespace, {k: v for k, v in list(namespace.items()) if _guarded(v)})
            if isinstance(namespace, MappingProxyType):  # a class: a new attribute shadows an inherited one
                self._class_keys[label] = frozenset(namespace)

    def changes(self) -> list[str]:
        """One line per replaced, deleted or (on a class) added attribute since the snapshot."""
        found = []
        for label, keys in self._class_keys.items():
            namespace = self._entries[label][0]
            for name in sorted(set(namespace) - keys):
                found.append(
                    f"{label}.{name} was added ({_describe(namespace[name])}), shadowing the harness's"
                )
        for label, (namespace, originals) in self._entries.items():
            for name, original in originals.items():
                current = namespace.get(name, _MISSING)
                if current is _MISSING:
                    found.append(f"{label}.{name} was deleted")
                elif current is not original:
                    found.append(f"{label}.{name} was replaced by {_describe(current)}")
        for name, module in self._modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}] was replaced")
        return found


def _harness_module(name: str) -> bool:
    top = name.split(".", 1)[0]
    return top in ("evaluators", "time", "triton") or name in ("torch", "torch.cuda", "torch.testing")


_MISSING = object()


def precision_flags() -> dict[str, object]:
    """Global switches that silently lower the precision of PyTorch / cuBLAS math."""
    import torch

    probes: dict[str, Callable[[], object]] = {
        "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
            lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
            lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        ),
        "torch.get_default_dtype()": torch.get_default_dtype,
        # The fp32_precision API of newer torch (2.9+); absent attributes are skipped below.
        # (torch sets these on module objects it swaps in at import: its annotations do not list them)
        "torch.backends.fp32_precision": lambda: torch.backends.fp32_precision,  # type: ignore[attr-defined]
        "torch.backends.cuda.matmul.fp32_precision": lambda: torch.backends.cuda.matmul.fp32_precision,
        "torch.backends.cudnn.fp32_precision": lambda: torch.backends.cudnn.fp32_precision,
        "torch.backends.cudnn.conv.fp32_precision": (
            lambda: torch.backends.cudnn.conv.fp32_precision  # type: ignore[attr-defined]
        ),
        "torch.backends.mkldnn.fp32_precision": lambda: torch.backends.mkldnn.fp32_precision,
        "torch.is_autocast_enabled('cuda')": lambda: torch.is_autocast_enabled("cuda"),
        "torch.is_autocast_enabled('cpu')": lambda: torch.is_autocast_enabled("cpu"),
    }
    flags: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer torch warns that allow_tf32 is deprecated: reading is fine
        for name, probe in probes.items():
            try:
                flags[name] = probe()
            except Exception:  # a flag this torch build does not have
                continue
    return flags


def flag_changes(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    return [f"{k}: {before[k]!r} -> {after.get(k)!r}" for k in before if after.get(k) != before[k]]


def mode_stack_depths() -> tuple[int, int]:
    """(torch function modes, torch dispatch modes) currently pushed."""
    import torch

    function_depth = int(torch._C._len_torch_function_stack())
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        dispatch_depth = len(_get_current_dispatch_mode_stack())
    except Exception:  # private API moved: do without this half of the check
        dispatch_depth = 0
    return function_depth, dispatch_depth


# --- the candidate module's own state (class 7) --------------------------------------------------------


def _container_print(value: object) -> object:
    if isinstance(value, dict):
        return (
            "dict",
            len(value),
            tuple(id(k) for k in list(value)[:64]),
            tuple(id(v) for v in value.values()),
        )
    if isinstance(value, (list, set, frozenset, tuple)):
        items = list(value)
        return (type(value).__name__, len(items), tuple(id(v) for v in items[:256]))
    info = getattr(value, "cache_info", None)
    if callable(info):
        try:
            return ("lru_cache", info().currsize)
        except Exception:
            return ("lru_cache", None)
    if hasattr(value, "__len__") and type(value).__module__ in ("collections", "weakref"):
        try:
            return (type(value).__name__, len(value))
        except TypeError:
            return None
    return None


class ModuleFingerprint:
    """What a candidate module could use to carry results from one call to the next."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.state = self._take()

    def _take(self) -> dict[str, object]:
        state: dict[str, object] = {}
        for name, value in list(vars(self.module).items()):
            if name.startswith("__") and name.endswith("__"):
                continue
            state[name] = (id(value), _container_print(value))
            if isinstance(value, FunctionType):
                defaults = (value.__defaults__ or ()) + tuple((value.__kwdefaults__ or {}).values())
                state[f"{name}.__defaults__"] = tuple((id(d), _container_print(d)) for d in defaults)
                state[f"{name}.__dict__"] = tuple(
                    (k, id(v), _container_print(v)) for k, v in vars(value).items() if not k.startswith("__")
                )
        return state

    def changes(self) -> list[str]:
        """Names whose binding or container contents changed since the last call; re-baselines."""
        now = self._take()
        changed = sorted(k for k in set(now) | set(self.state) if now.get(k) != self.state.get(k))
        self.state = now
        return changed
