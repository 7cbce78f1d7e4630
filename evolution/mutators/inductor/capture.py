"""Trace a task's reference with torch.compile and keep the code Inductor generates (in a subprocess).

    python -m evolution.mutators.inductor.capture TASK --device cpu|cuda[:N] --out REPORT.json [--case NAME]

The reference is compiled with dynamic shapes (no duck sizing, so equal sizes stay separate symbols) through
a custom backend that runs Inductor's lowering and code generation but not its compilation: the wrapper code
is kept, the graph then runs eagerly. One capture per dtype specialisation the task's cases need. The
backend also records which reference argument each graph input comes from, and the reference's return value
is matched to the graph outputs by identity, so the host code can be rebuilt around the kernels.

On a machine without a GPU, Inductor is asked for Triton code for the CPU (`cpu_backend = "triton"`); its
code generator only needs a Triton target description, which a stand-in driver provides (nothing is compiled).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from evolution.mutators.inductor.model import Capture, CaptureReport, GraphInput, OutputNode

_SOURCE_ARG = re.compile(r"L\['(\w+)'\]")
_MAX_PROBED_CASES = 4  # cases per dtype group whose inputs are built to find one without 0/1 sizes
_PROBED_SEEDS = 4  # input seeds tried per probed case (random lengths may or may not coincide with a size)


class CaptureError(Exception):
    """The reference cannot be captured as one Inductor graph with Triton kernels; the message says why."""


def capture_task(task_dir: str, device: str, case_name: str | None = None) -> CaptureReport:
    import torch

    from evaluators.errors import KernelbotError
    from evaluators.task import load_task

    task = load_task(task_dir)
    try:
        reference = task.load_reference()
        signature = _signature_text(task.reference_path, task.entry)
        chosen, notes = _choose_cases(task, device, case_name)
        captures: list[Capture] = []
        seen: set[tuple[tuple[str, str], ...]] = set()
        for case, args, kwargs in chosen:
            arguments = inspect.signature(reference).bind(*args, **kwargs).arguments
            dtypes = {
                n: str(v.dtype).removeprefix("torch.") for n, v in arguments.items() if torch.is_tensor(v)
            }
            key = tuple(sorted(dtypes.items()))
            if key in seen:
                continue
            seen.add(key)
            variant = "-".join(dict.fromkeys(dtypes.values()))
            captures.append(_capture_case(reference, case.name, variant, args, kwargs, dtypes, device))
    except CaptureError as exc:
        return CaptureReport(error=str(exc), torch_version=torch.__version__, device=device)
    except KernelbotError as exc:  # the task's reference or inputs fail to load or run
        return CaptureReport(
            error=f"cannot trace the task: {exc}", torch_version=torch.__version__, device=device
        )
    return CaptureReport(
        captures=tuple(captures),
        signature=signature,
        torch_version=torch.__version__,
        device=device,
        notes=tuple(notes),
    )


# --- which cases to trace --------------------------------------------------------------------------------


def _choose_cases(
    task: Any, device: str, case_name: str | None
) -> tuple[list[tuple[Any, tuple, dict]], list[str]]:
    """One case per dtype group; within a group, the smallest whose inputs hold no size or int of 0 or 1
    (torch.compile specialises those to constants, which would bake them into the kernels) and no int equal
    to a tensor size (see _coincidences)."""
    if case_name is not None:
        case = task.case(case_name)
        return [(case, *task.make_inputs(case, 0, device))], []
    groups: dict[tuple, list[Any]] = {}
    for case in task.cases:
        if case.is_captured:
            continue
        key = tuple(sorted((k, v) for k, v in case.params.items() if isinstance(v, (str, bool))))
        groups.setdefault(key, []).append(case)
    chosen, notes = [], []
    for cases in groups.values():
        ranked = sorted(cases, key=_case_size)[:_MAX_PROBED_CASES]
        best = None
        for case in ranked:
            for seed in range(_PROBED_SEEDS):
                args, kwargs = task.make_inputs(case, seed, device)
                specials = _special_values(args, kwargs) + _coincidences(args, kwargs)
                if best is None or specials < best[0]:
                    best = (specials, case, args, kwargs)
                if specials == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None
        specials, case, args, kwargs = best
        if specials:
            notes.append(
                f"case {case.name} has {specials} sizes/ints of 0 or 1 or ints equal to a tensor size, "
                "which torch.compile specialises or guards on"
            )
        chosen.append((case, args, kwargs))
    if not chosen:
        raise CaptureError("the task has no case with generated inputs to trace")
    return chosen, notes


def _case_size(case: Any) -> float:
    ints = [v for v in case.params.values() if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return math.prod(ints) if ints else 0


def _special_values(args: tuple, kwargs: dict) -> int:
    import torch

    count = 0
    for value in _leaves([*args, *kwargs.values()]):
        if torch.is_tensor(value):
            count += sum(1 for d in value.shape if d in (0, 1))
        elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            count += 1
    return count


def _coincidences(args: tuple, kwargs: dict) -> int:
    """Int arguments equal to a size of some tensor argument. Tracing `t[:, :n]` with n == t.shape[1]
    makes Dynamo guard on that equality and Inductor size the kernel by the tensor, not by n: the seed
    would then write the whole row for every n (seen on the H200 with decode_metadata's max_seq_pages)."""
    import torch

    leaves = list(_leaves([*args, *kwargs.values()]))
    sizes = {d for v in leaves if torch.is_tensor(v) for d in v.shape if d > 1}
    return sum(1 for v in leaves if isinstance(v, int) and not isinstance(v, bool) and v > 1 and v in sizes)


def _leaves(values: list[Any]) -> Iterator[Any]:
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from _leaves(list(value))
        elif isinstance(value, dict):
            yield from _leaves(list(value.values()))
        else:
            yield value


# --- one capture ----------------------------------------------------------------------------------------


def _capture_case(
    reference: Any, case: str, variant: str, args: tuple, kwargs: dict, dtypes: dict[str, str], device: str
) -> Capture:
    import torch

    arguments = inspect.signature(reference).bind(*args, **kwargs).arguments
    state: dict[str, Any] = {}

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        if "wrapper" in state:
            raise CaptureError("torch.compile split the reference into several graphs")
        state["inputs"] = [
            _graph_input(node, arguments) for node in gm.graph.nodes if node.op == "placeholder"
        ]
        state["wrapper"], state["graph_outputs"] = _inductor_code(gm, example_inputs)

        def run(*inputs: Any) -> Any:
            outputs = gm(*inputs)
            state["outputs"] = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            return outputs

        return run

    torch._dynamo.reset()
    compiled = torch.compile(reference, backend=backend, dynamic=True, fullgraph=True)
    try:
        with _inductor_settings(device):
            result = compiled(*args, **kwargs)
    except CaptureError:
        raise
    except Exception as exc:
        cause = _root_cause(exc)
        if isinstance(cause, CaptureError):
            raise cause from exc
        raise CaptureError(
            f"torch.compile cannot trace the reference as one graph: {_one_line(cause)}"
        ) from exc
    if "wrapper" not in state:
        raise CaptureError("torch.compile found no tensor work in the reference")
    if state["graph_outputs"] >= 0 and len(state["outputs"]) != state["graph_outputs"]:
        raise CaptureError("Inductor's graph returns extra outputs (aliasing the reference does not support)")
    return Capture(
        variant=variant,
        case=case,
        wrapper=state["wrapper"],
        inputs=tuple(state["inputs"]),
        outputs=_structure(result, state["outputs"], arguments),
        dtypes=dtypes,
    )


def _graph_input(node: Any, arguments: dict[str, Any]) -> GraphInput:
    """Which reference argument (or size of one) a placeholder of Dynamo's graph stands for."""
    import torch

    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    if source is None:
        raise CaptureError(f"graph input {node.name} has no source in the reference's arguments")
    name = source.name() if callable(source.name) else source.name
    expr = _SOURCE_ARG.sub(r"\1", name)
    expr = re.sub(r"\.size\(\)\[(\d+)\]", r".shape[\1]", expr)
    expr = re.sub(r"\.stride\(\)\[(\d+)\]", r".stride(\1)", expr)
    try:
        value = eval(compile(expr, "<graph input>", "eval"), {"__builtins__": {}}, dict(arguments))
    except Exception as exc:
        raise CaptureError(f"graph input {name} is not an expression of the reference's arguments") from exc
    example = node.meta.get("example_value")
    if torch.is_tensor(value):
        return GraphInput("tensor", expr)
    if isinstance(value, (int, float)) and torch.is_tensor(example):
        return GraphInput("scalar", expr)  # a Python number Dynamo passes as a 0-d tensor
    if isinstance(value, int):
        return GraphInput("symint", expr)
    raise CaptureError(f"graph input {name} is a {type(value).__name__}, which kernelbot cannot pass on")


def _inductor_code(gm: Any, example_inputs: list[Any]) -> tuple[str, int]:
    """Inductor's wrapper code for `gm` (lowered and generated, never compiled) and its output count."""
    from torch._guards import TracingContext
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering

    found: dict[str, Any] = {}

    class _NotCompiled:
        def call(self, *args: Any, **kwargs: Any) -> None:  # never run: the backend runs the graph eagerly
            return None

    def generate_only(lowering: Any) -> Any:
        wrapper, _ = lowering.codegen_with_cpp_wrapper() if lowering.cpp_wrapper else lowering.codegen()
        found["code"] = getattr(wrapper, "value", wrapper)  # ValueWithLineMap on current releases
        context = TracingContext.try_get()
        found["metadata"] = getattr(context, "fw_metadata", None)
        return _NotCompiled()

    with mock.patch.object(GraphLowering, "compile_to_module", generate_only):
        compile_fx(gm, example_inputs)
    metadata = found.get("metadata")
    if metadata is not None:
        for index, info in enumerate(metadata.input_info):
            if "OUT_GRAPH" in str(getattr(info, "mutation_type", "")):
                raise CaptureError(f"Inductor leaves the in-place update of graph input {index} to PyTorch")
        if getattr(metadata, "num_intermediate_bases", 0):
            raise CaptureError("the reference returns views of intermediates (unsupported)")
    return found["code"], len(metadata.output_info) if metadata is not None else -1


def _structure(value: Any, graph_outputs: list[Any], arguments: dict[str, Any]) -> OutputNode:
    import torch

    if torch.is_tensor(value):
        for index, output in enumerate(graph_outputs):
            if output is value:
                return {"out": index}
        for name, argument in arguments.items():
            if argument is value:
                return {"arg": name}
        raise CaptureError("the reference returns a tensor that is neither a graph output nor an argument")
    if value is None or isinstance(value, (bool, str)):
        return {"const": repr(value)}
    if type(value) is tuple:
        return {"tuple": [_structure(v, graph_outputs, arguments) for v in value]}
    if type(value) is list:
        return {"list": [_structure(v, graph_outputs, arguments) for v in value]}
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return {"dict": [[k, _structure(v, graph_outputs, arguments)] for k, v in value.items()]}
    raise CaptureError(f"the reference returns a {type(value).__name__}, which kernelbot cannot rebuild")


# --- settings -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _inductor_settings(device: str) -> Iterator[None]:
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config
    import torch.fx.experimental._config as fx_config

    wanted = {
        "force_disable_caches": True,
        "fx_graph_cache": False,
        "size_asserts": False,
        "alignment_asserts": False,
        "assert_indirect_indexing": False,
        "cpu_backend": "triton",
        "compile_threads": 1,  # nothing is compiled: no pool of compile workers to start
        # Kernel shapes a plain launch cannot reproduce (split/cooperative launches, runtime kernel choice,
        # combined kernels) or helpers we do not re-implement (online softmax): ask for the classic forms.
        "online_softmax": False,
        "combo_kernels": False,
        "triton.mix_order_reduction": False,
        "triton.cooperative_reductions": False,
        "triton.multi_kernel": 0,
    }
    # Only the settings this torch knows (names move between releases).
    try:
        known = set(inductor_config.get_config_copy())
    except AttributeError:  # pragma: no cover - very old config modules
        known = {k for k in wanted if "." not in k and hasattr(inductor_config, k)}
    settings = {k: v for k, v in wanted.items() if k in known}
    # Python floats (eps, scales) stay arguments of the graph instead of constants baked into the kernels
    # (older releases specialise them by default); ints are not specialised either.
    dynamo = {k: False for k in ("specialize_float", "specialize_int") if hasattr(dynamo_config, k)}
    with (
        inductor_config.patch(settings),
        fx_config.patch(use_duck_shape=False),
        dynamo_config.patch(dynamo),
        _target_for(device),
    ):
        yield


@contextlib.contextmanager
def _target_for(device: str) -> Iterator[None]:
    """Without a GPU, give Triton's driver registry a target description so Inductor can generate code."""
    if device.startswith("cuda"):
        yield
        return
    from triton.backends.compiler import GPUTarget
    from triton.runtime.driver import driver

    class CodegenOnlyDriver:
        def get_current_target(self) -> GPUTarget:
            return GPUTarget("cuda", 90, 32)

    driver.set_active(CodegenOnlyDriver())
    try:
        yield
    finally:
        driver._active = None


def _signature_text(path: Path, entry: str) -> str:
    """`def entry(params) -> returns:` from reference.py, with defaults made literal."""
    tree = ast.parse(path.read_text())
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if fn is None:
        raise CaptureError(f"{path} defines no top-level function {entry}")
    defaults = [*fn.args.defaults, *[d for d in fn.args.kw_defaults if d is not None]]
    for node in defaults:
        try:
            ast.literal_eval(node)
        except ValueError:
            raise CaptureError(f"{entry}: a default value is not a literal: {ast.unparse(node)}") from None
    returns = f" -> {ast.unparse(fn.returns)}" if fn.returns is not None else ""
    return f"def {entry}({ast.unparse(fn.args)}){returns}:"


def _root_cause(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or getattr(exc, "inner_exception", None) is not None:
        exc = getattr(exc, "inner_exception", None) or exc.__cause__  # type: ignore[assignment]
    return exc


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}"
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + " …"  # never cut a word: a cut name or number misleads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True)
    parser.add_argument("--case", default=None)
    options = parser.parse_args(argv)
    report = capture_task(options.task, options.device, options.case)
    Path(options.out).write_text(report.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
