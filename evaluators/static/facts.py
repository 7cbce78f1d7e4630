"""What the static checks need to know about the task: its floating dtypes (is it a float32 task?), the
sizes its `dynamic` keys take in the listed cases, and the module names that would reach its reference."""

from __future__ import annotations

from typing import Any

from evaluators.task import Task


def dynamic_sizes(task: Task) -> dict[int, str]:
    sizes: dict[int, str] = {}
    for case in task.cases:
        for key in task.dynamic:
            value = case.params.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 2:
                sizes[value] = key
    return sizes


def reference_modules(task: Task) -> set[str]:
    """Module names that would reach the reference or its original implementation."""
    names = {"reference", "kb_reference"}
    repo = task.source.repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git").replace("-", "_").lower()
    if repo:
        names.add(repo)
    first = task.source.path.split("/")[0] if task.source.path else ""
    if first and first not in ("python", "src", "lib"):
        names.add(first.removesuffix(".py"))
    elif task.source.path.count("/") >= 2:
        names.add(task.source.path.split("/")[1])
    return {n for n in names if n and n not in ("torch", "triton")}


_DTYPE_ALIASES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "f32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float64": "float64",
    "fp64": "float64",
    "double": "float64",
}
_dtype_cache: dict[str, frozenset[str]] = {}


def task_float_dtypes(task: Task) -> frozenset[str]:
    """Floating dtypes the task's inputs use: from `dtype`-like case parameters, else from the inputs of the
    smallest case (built as fake tensors when make_inputs allows it)."""
    key = str(task.root)
    if key not in _dtype_cache:
        named = {
            _DTYPE_ALIASES[v.lower()]
            for c in task.cases
            for v in c.params.values()
            if isinstance(v, str) and v.lower() in _DTYPE_ALIASES
        }
        _dtype_cache[key] = frozenset(named) if named else _dtypes_from_inputs(task)
    return _dtype_cache[key]


def _smallest_case(task: Task) -> Any:
    """The generated case of the smallest sizes (a captured one only where there is no other)."""
    cases = [c for c in task.cases if not c.is_captured] or list(task.cases)
    return min(cases, key=lambda c: sum(v for v in c.params.values() if isinstance(v, int)))


def _dtypes_from_inputs(task: Task) -> frozenset[str]:
    import torch

    smallest = _smallest_case(task)
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True):
            args, kwargs = task.make_inputs(smallest, 0, "cpu")
    except Exception:
        try:
            args, kwargs = task.make_inputs(smallest, 0, "cpu")
        except Exception:  # the correctness stage will report a broken task; here: dtype unknown
            return frozenset()
    leaves = [*args, *kwargs.values()]
    return frozenset(
        str(t.dtype).removeprefix("torch.")
        for t in leaves
        if isinstance(t, torch.Tensor) and t.is_floating_point()
    )


_host_cache: dict[str, frozenset[str]] = {}


def host_arguments(task: Task) -> frozenset[str]:
    """The reference's tensor arguments that the task keeps on the CPU whatever the device (an input spec's
    `seq_lens.cpu()`): host code may compute with them as the reference does (a bound read with `.max()`),
    since no kernel runs on the host. Found by building the smallest case's inputs with each move to the
    CPU recorded."""
    key = str(task.root)
    if key not in _host_cache:
        try:
            _host_cache[key] = frozenset(host_inputs(task, _smallest_case(task), 0, "cpu")[2])
        except Exception:  # the correctness stage will report a broken task; here: none known
            _host_cache[key] = frozenset()
    return _host_cache[key]


def host_inputs(task: Task, case: Any, seed: int, device: str) -> tuple[tuple, dict, list[str]]:
    """`task.make_inputs(case, seed, device)` with every tensor its spec moves to the CPU (`.cpu()`,
    `.to("cpu")`) a tensor of its own (on a CPU device the move returns the tensor itself), and the names of
    the reference's arguments that hold one."""
    import inspect

    import torch
    from torch.overrides import TorchFunctionMode

    moved: set[int] = set()

    class _Moves(TorchFunctionMode):
        def __torch_function__(
            self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None
        ) -> Any:
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            name = getattr(func, "__name__", "")
            to_cpu = name == "cpu" or (name == "to" and _names_cpu([*args[1:], *kwargs.values()]))
            if to_cpu and torch.is_tensor(result) and result.device.type == "cpu":
                if args and result is args[0]:
                    result = result.clone()
                moved.add(id(result))
            return result

    with _Moves():  # (the task's own moves to `device` are not moves to the host)
        args, kwargs = task.make_inputs(case, seed, _TaskDevice(device))
    bound = inspect.signature(task.load_reference()).bind(*args, **kwargs).arguments
    names = [
        name
        for name, value in bound.items()
        if torch.is_tensor(value) and (id(value) in moved or id(getattr(value, "_base", None)) in moved)
    ]
    return args, kwargs, names


class _TaskDevice(str):
    """The device the inputs are built for, told apart from a spec's own `"cpu"`."""


def _names_cpu(values: list[Any]) -> bool:
    import torch

    return any(
        (type(v) is str and v == "cpu") or (isinstance(v, torch.device) and v.type == "cpu") for v in values
    )
