"""The Dynamo run over every case: one backend call per specialisation, each graph handed to AOTAutograd for
its functional ATen form and recorded (never compiled: the graph runs eagerly, so the cases' results are the
reference's own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evolution.writers.fusion.model import Graph
from evolution.writers.fusion.trace.encode import (
    graph_dict,
    is_python_number,
    placeholder_source,
    shape_env_facts,
)
from evolution.writers.fusion.trace.inputs import dynamic_symbols, proxy_inputs
from evolution.writers.fusion.trace.sizes import reserved_names
from evolution.writers.tracing.cases import in_trace_order
from evolution.writers.tracing.errors import TraceError, one_line, root_cause
from evolution.writers.tracing.results import arg_kinds, result_structure
from evolution.writers.tracing.spec_dims import spec_dim_names
from evolution.writers.tracing.torch_compat import unbacked_copies

_RECOMPILE_LIMIT = 64


def trace_cases(task: Any, reference: Any, device: str) -> list[Graph]:
    import inspect

    import torch
    import torch._dynamo.config as dynamo_config
    import torch.fx.experimental._config as fx_config

    recorder = _Recorder(reference)
    limits = {
        k: _RECOMPILE_LIMIT
        for k in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit")
        if hasattr(dynamo_config, k)
    }
    unspecialised = {k: False for k in ("specialize_float", "specialize_int") if hasattr(dynamo_config, k)}
    ordered = in_trace_order(task)
    if not ordered:
        raise TraceError("the task has no case to trace")
    torch._dynamo.reset()
    # A decorator's wrapper (`@torch.no_grad()`) takes *args: Dynamo would name the graph's inputs after
    # it (`L['args'][3]`); the function it wraps names them as the reference's parameters.
    target = inspect.unwrap(reference)
    compiled = torch.compile(target, backend=recorder.backend, dynamic=True, fullgraph=True)
    signature = inspect.signature(reference)
    # torch installs `patch` on its config modules at import; this one (unlike dynamo's) does not declare it
    fx_patch = fx_config.patch(use_duck_shape=False)  # type: ignore[attr-defined]
    with dynamo_config.patch({**limits, **unspecialised}), fx_patch, unbacked_copies():
        for case in ordered:
            args, kwargs, proxy = proxy_inputs(task, case, device)
            arguments = dict(signature.bind(*args, **kwargs).arguments)
            recorder.used = -1
            try:
                with torch.no_grad():
                    result = compiled(*args, **kwargs)
            except TraceError:
                raise
            except Exception as exc:
                cause = root_cause(exc)
                if isinstance(cause, TraceError):
                    raise cause from exc
                raise TraceError(
                    f"Dynamo cannot trace the reference as one graph: {one_line(cause)}"
                ) from exc
            if recorder.used < 0:
                raise TraceError(f"case {case.name}: the reference ran without a graph (no tensor work)")
            entry = recorder.graphs[recorder.used]
            entry["cases"].append(case.name)
            if "result" not in entry:
                entry["result"] = result_structure(result, recorder.last_outputs, arguments)
                entry["arg_kinds"] = arg_kinds(arguments)
                entry["dynamic_symbols"] = dynamic_symbols(task, case, proxy, entry["symbols"], device)
                found = [*entry["dynamic_symbols"], *entry.get("host_symbols", {})]
                entry["dynamic_symbols"] = list(dict.fromkeys(found))
                entry["hints"].update(host_hints(entry, arguments))
                # the spec's axis names come after the reference's own, which win where both name a size
                spec = spec_dim_names(task.inputs_path, entry["symbols"], reference, reserved_names(set()))
                named = entry["size_names"]
                entry["size_names"] = {**named, **{s: n for s, n in spec.items() if s not in named}}
    torch._dynamo.reset()
    return [Graph.from_dict(g) for g in recorder.graphs]


def host_hints(entry: dict[str, Any], arguments: dict[str, Any]) -> dict[str, int]:
    """The values of the host symbols (`u0`) on the case traced: their host code run on its arguments."""
    import torch

    values: dict[str, Any] = {**arguments, **entry["hints"]}
    hints: dict[str, int] = {}
    for symbol, code in entry.get("host_symbols", {}).items():
        try:
            values[symbol] = hints[symbol] = int(eval(code, {"torch": torch}, values))
        except Exception as exc:
            raise TraceError(f"the host cannot compute {symbol} as {code}: {one_line(exc)}") from exc
    return hints


class _Recorder:
    """The Dynamo backend: each call is one specialisation, recorded as a Graph dict."""

    def __init__(self, reference: Any) -> None:
        self.reference = reference
        self.graphs: list[dict[str, Any]] = []
        self.used = -1
        self.last_outputs: list[Any] = []

    def backend(self, gm: Any, example_inputs: list[Any]) -> Any:
        from torch._functorch.aot_autograd import aot_module_simplified
        from torch._guards import TracingContext

        index = len(self.graphs)
        dynamo_inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        sources = [(placeholder_source(n), is_python_number(n)) for n in dynamo_inputs]
        captured: dict[str, Any] = {}

        # (parameter names as AOTAutograd's compiler protocol spells them: the forward graph, its inputs)
        def forward_compiler(gm: Any, example_inputs: Sequence[Any]) -> Any:
            captured["graph"] = gm
            return gm

        inner = aot_module_simplified(
            gm, example_inputs, fw_compiler=forward_compiler, keep_inference_input_mutations=True
        )
        context = TracingContext.try_get()
        shape_env = context.fake_mode.shape_env if context is not None and context.fake_mode else None
        entry = graph_dict(captured["graph"], sources, self.reference)
        entry.update(shape_env_facts(shape_env))
        entry["symbols"].update(entry.get("host_symbols", {}))
        entry["cases"] = []
        self.graphs.append(entry)

        def run(*inputs: Any) -> Any:
            self.used = index
            outputs = inner(*inputs)
            self.last_outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            return outputs

        return run
