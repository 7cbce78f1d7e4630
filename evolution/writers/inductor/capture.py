"""Trace a task's reference with torch.compile and keep the code Inductor generates (in a subprocess).

    python -m evolution.writers.inductor.capture TASK --device cpu|cuda[:N] --out REPORT.json [--case NAME]

The reference is compiled with dynamic shapes (no duck sizing, so equal sizes stay separate symbols) through
a custom backend that runs Inductor's lowering and code generation but not its compilation: the wrapper code
is kept, the graph then runs eagerly. One capture per dtype specialisation the task's cases need. The
backend also records which reference argument each graph input comes from, and the reference's return value
is matched to the graph outputs by identity, so the host code can be rebuilt around the kernels.

On a machine without a GPU, Inductor is asked for Triton code for the CPU (`cpu_backend = "triton"`); its
code generator only needs a Triton target description, which a stand-in driver provides (nothing is compiled).
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

from evolution.writers.inductor.host import HOST_NAMES
from evolution.writers.inductor.model import Capture, CaptureReport, GraphInput, OutputNode
from evolution.writers.inductor.settings import inductor_settings
from evolution.writers.tracing.cases import PROXIES, choose_cases, proxied
from evolution.writers.tracing.errors import TraceError, first_of, one_line, root_cause
from evolution.writers.tracing.results import result_structure
from evolution.writers.tracing.signature import entry_function, resolve_defaults
from evolution.writers.tracing.spec_dims import spec_dim_names
from evolution.writers.tracing.torch_compat import unbacked_copies

_SOURCE_ARG = re.compile(r"L\['(\w+)'\]")
_SOURCE_GLOBAL = re.compile(r"^G\['(\w+)'\]$")


class CaptureError(Exception):
    """The reference cannot be captured as one Inductor graph with Triton kernels; the message says why."""


class CaptureBug(Exception):
    """Our own capture code failed on a graph torch.compile traced (not the reference's fault). It is never
    turned into a report: the capture process exits with its traceback, which the seed reports as internal."""


def capture_task(task_dir: str, device: str, case_name: str | None = None) -> CaptureReport:
    import torch

    from evaluators.errors import KernelbotError
    from evaluators.task import load_task

    task = load_task(task_dir)
    try:
        reference = task.load_reference()
        signature = _signature_text(task.reference_path, task.entry, reference)
        chosen, notes = choose_cases(task, device, case_name)
        if not chosen:
            raise CaptureError("the task has no case with generated inputs to trace")
        captures: list[Capture] = []
        seen: set[tuple[tuple[str, str], ...]] = set()
        for case, args, kwargs in chosen:
            arguments = bound_arguments(reference, args, kwargs)
            dtypes = {
                n: str(v.dtype).removeprefix("torch.") for n, v in arguments.items() if torch.is_tensor(v)
            }
            key = tuple(sorted(dtypes.items()))
            if key in seen:
                continue
            seen.add(key)
            variant = "-".join(dict.fromkeys(dtypes.values()))
            capture = _capture_case(reference, case.name, variant, args, kwargs, dtypes, device)
            fixed = _fixed_inputs(task, case, reference, capture.inputs, device)
            inputs = tuple(replace(i, dynamic=i.expr not in fixed) for i in capture.inputs)
            captures.append(replace(capture, inputs=inputs))
    except CaptureError as exc:
        return CaptureReport(error=str(exc), torch_version=torch.__version__, device=device)
    except KernelbotError as exc:  # the task's reference or inputs fail to load or run
        return CaptureReport(
            error=f"cannot trace the task: {exc}", torch_version=torch.__version__, device=device
        )
    sources = {i.expr: i.expr for c in captures for i in c.inputs if i.kind == "symint"}
    return CaptureReport(
        captures=tuple(captures),
        signature=signature,
        torch_version=torch.__version__,
        device=device,
        notes=tuple(notes),
        size_names=spec_dim_names(task.inputs_path, sources, reference, set(HOST_NAMES)),
    )


def bound_arguments(reference: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Every parameter of the reference by name, as one call with (args, kwargs) sees it: defaults the case
    leaves out included (an extracted method's `self.eps` is a keyword-only parameter with a default)."""
    try:
        bound = inspect.signature(reference).bind(*args, **kwargs)
    except TypeError as exc:
        raise CaptureError(f"the case's inputs do not fit the reference's signature: {exc}") from exc
    bound.apply_defaults()
    return dict(bound.arguments)


def _fixed_inputs(
    task: Any, case: Any, reference: Any, inputs: tuple[GraphInput, ...], device: str
) -> set[str]:
    """The int inputs (sizes, int arguments) whose value stays put when the case's dynamic keys move to
    other values and its inputs are drawn with another seed; none where the inputs cannot be built that
    way (a captured case, a size the inputs refuse), so that nothing is fixed that may vary."""
    ints = [i.expr for i in inputs if i.kind == "symint"]
    if not ints or case.is_captured:  # a recorded call's inputs do not move with its keys
        return set()
    settings = [(case, 0), (case, 1)]
    if any(k in case.params for k in task.dynamic):
        settings += [(proxied(task, case, p), 0) for p in PROXIES[:2]]
    seen: dict[str, set[str]] = {expr: set() for expr in ints}
    for variant, seed in settings:
        try:
            args, kwargs = task.make_inputs(variant, seed, device)
            arguments = bound_arguments(reference, args, kwargs)
        except Exception:  # the inputs do not take that size: what varies cannot be told
            return set()
        for expr in ints:
            try:
                seen[expr].add(repr(eval(expr, {"__builtins__": {}}, dict(arguments))))
            except Exception:
                seen[expr].add(f"unreadable at {variant.name}, seed {seed}")
    return {expr for expr, values in seen.items() if len(values) == 1}


# --- one capture ----------------------------------------------------------------------------------------


def _capture_case(
    reference: Any, case: str, variant: str, args: tuple, kwargs: dict, dtypes: dict[str, str], device: str
) -> Capture:
    import torch

    arguments = bound_arguments(reference, args, kwargs)
    state: dict[str, Any] = {}

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        if "wrapper" in state:
            raise CaptureError("torch.compile split the reference into several graphs")
        try:
            state["inputs"] = [
                _graph_input(node, arguments, reference)
                for node in gm.graph.nodes
                if node.op == "placeholder"
            ]
        except CaptureError:
            raise
        except Exception as exc:
            raise CaptureBug(
                f"mapping the graph's inputs to the reference's arguments failed: {exc!r}"
            ) from exc
        try:
            state["wrapper"], state["graph_outputs"] = _inductor_code(gm, example_inputs)
        except CaptureError:
            raise
        except Exception as exc:  # Inductor's own lowering or code generation refused the graph
            raise CaptureError(f"Inductor cannot generate code for the reference: {one_line(exc)}") from exc

        def run(*inputs: Any) -> Any:
            outputs = gm(*inputs)
            state["outputs"] = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            return outputs

        return run

    torch._dynamo.reset()
    # A decorator's wrapper (`@torch.no_grad()`) takes *args: Dynamo would name the graph's inputs after
    # it (`L['args'][3]`); the function it wraps names them as the reference's parameters.
    compiled = torch.compile(inspect.unwrap(reference), backend=backend, dynamic=True, fullgraph=True)
    try:
        with inductor_settings(device), unbacked_copies():
            result = compiled(*args, **kwargs)
    except CaptureError:
        raise
    except Exception as exc:
        bug = first_of(exc, CaptureBug)
        if bug is not None:
            raise bug from exc
        ours = first_of(exc, CaptureError)
        if ours is not None:
            raise ours from exc
        cause = root_cause(exc)
        raise CaptureError(
            f"torch.compile cannot trace the reference as one graph: {one_line(cause)}"
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


def _graph_input(node: Any, arguments: dict[str, Any], reference: Any) -> GraphInput:
    """Which reference argument (or size of one) a placeholder of Dynamo's graph stands for."""
    import torch

    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    if source is None:
        raise CaptureError(f"graph input {node.name} has no source in the reference's arguments")
    name = source.name() if callable(source.name) else source.name
    module_level = _SOURCE_GLOBAL.match(name)
    if module_level is not None:
        return _module_constant(module_level.group(1), reference)
    expr = _SOURCE_ARG.sub(r"\1", name)
    expr = re.sub(r"\.size\(\)\[(\d+)\]", r".shape[\1]", expr)
    expr = re.sub(r"\.stride\(\)\[(\d+)\]", r".stride(\1)", expr)
    try:
        value = eval(compile(expr, "<graph input>", "eval"), {"__builtins__": {}}, dict(arguments))
    except Exception as exc:
        raise CaptureBug(f"graph input {name} is not an expression of the reference's arguments") from exc
    example = node.meta.get("example_value")
    if torch.is_tensor(value):
        return GraphInput("tensor", expr)
    if isinstance(value, (int, float)) and torch.is_tensor(example):
        return GraphInput("scalar", expr)  # a Python number Dynamo passes as a 0-d tensor
    if isinstance(value, int):
        return GraphInput("symint", expr)
    raise CaptureError(f"graph input {name} is a {type(value).__name__}, which kernelbot cannot pass on")


def _module_constant(name: str, reference: Any) -> GraphInput:
    """A module-level Python number the reference reads (`_EPSILON = 1e-20`), which Dynamo lifts into a graph
    input: the candidate cannot import the reference's module, so the value is written in as a literal."""
    globals_ = getattr(reference, "__globals__", {})
    if name not in globals_:
        raise CaptureError(f"graph input {name!r} is a module-level name the reference's module lacks")
    value = globals_[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CaptureError(
            f"the reference reads the module-level {type(value).__name__} {name!r} as a graph input "
            "(only finite Python numbers can be written into a candidate)"
        )
    return GraphInput("scalar" if isinstance(value, float) else "symint", repr(value))


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
    # Only None, bools and strings are written back as constants: a number the reference returns would be
    # baked into the host code for every call.
    return result_structure(
        value, graph_outputs, arguments, constants=(bool, str), error=CaptureError, who="kernelbot"
    )


def _signature_text(path: Path, entry: str, reference: Any) -> str:
    """`def entry(params) -> returns:` from reference.py, with defaults made literal (a module constant
    such as `topk=TOP_K` becomes its value: the candidate does not define the reference's constants)."""
    try:
        fn = entry_function(path, entry)
    except TraceError as exc:
        raise CaptureError(str(exc)) from None
    try:
        resolve_defaults(fn.args, reference, inline=True)
    except TraceError as exc:
        raise CaptureError(f"{entry}: {exc}") from None
    for node in [*fn.args.defaults, *[d for d in fn.args.kw_defaults if d is not None]]:
        try:
            ast.literal_eval(node)
        except ValueError:
            raise CaptureError(f"{entry}: a default value is not a literal: {ast.unparse(node)}") from None
    returns = f" -> {ast.unparse(fn.returns)}" if fn.returns is not None else ""
    return f"def {entry}({ast.unparse(fn.args)}){returns}:"


if __name__ == "__main__":
    from evolution.writers.tracing.launch import end_traced_process, report_main

    end_traced_process(report_main(__doc__.splitlines()[0], capture_task, options={"--case": "case_name"}))
