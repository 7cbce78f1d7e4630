"""Trace a task's reference into ATen graphs (run in a subprocess: it imports torch, changes Dynamo's global
state and takes seconds).

    python -m evolution.fusion.trace TASK --out REPORT.json [--device cpu]

The reference is compiled by Dynamo with dynamic shapes (no duck sizing, ints and floats not specialised)
through a backend that hands the captured graph to AOTAutograd for its functional ATen form (input mutations
kept in the graph as copy_ into the input) and records it; nothing is compiled, the graph runs eagerly. Every
case's inputs are run through the compiled reference: a case whose guards an earlier graph satisfies reuses
it, any other makes a new specialisation (a new dtype, another branch taken). The task's dynamic case keys are
set to a proxy value for tracing (a size of 1 would be specialised to a constant), so those sizes stay
symbolic.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

from evolution.fusion.model import Graph, OutputNode, TraceReport

_PROXIES = (13, 11, 17, 7, 19, 5, 23, 3)  # dynamic-key values to trace with: primes, unlikely to coincide
_RECOMPILE_LIMIT = 64
_SOURCE_PATTERNS = (
    (re.compile(r"\.size\(\)\[(\d+)\]"), r".shape[\1]"),
    (re.compile(r"\.stride\(\)\[(\d+)\]"), r".stride(\1)"),
)


class TraceError(Exception):
    """The reference cannot be traced into one ATen graph per specialisation; the message says why."""


def trace_task(task_dir: str, device: str = "cpu") -> TraceReport:
    import torch

    from evaluators.errors import KernelbotError
    from evaluators.task import load_task

    task = load_task(task_dir)
    try:
        reference = task.load_reference()
        signature, returns, params = _signature(task.reference_path, task.entry)
        graphs = _trace_cases(task, reference, device)
    except TraceError as exc:
        return TraceReport(error=str(exc), torch_version=torch.__version__)
    except KernelbotError as exc:  # the task's reference or inputs fail to load or run
        return TraceReport(error=f"cannot trace the task: {exc}", torch_version=torch.__version__)
    return TraceReport(
        graphs=tuple(graphs),
        signature=signature,
        returns=returns,
        params=params,
        torch_version=torch.__version__,
    )


# --- inputs to trace with ---------------------------------------------------------------------------------


def _proxied(task: Any, case: Any, value: int) -> Any:
    params = dict(case.params)
    for key in task.dynamic:
        if key in params:
            params[key] = value
    return dataclasses.replace(case, params=params)


def _sizes_and_ints(args: tuple, kwargs: dict) -> list[int]:
    import torch

    found: list[int] = []
    for value in _leaves([*args, *kwargs.values()]):
        if torch.is_tensor(value):
            found.extend(int(d) for d in value.shape)
        elif isinstance(value, int) and not isinstance(value, bool):
            found.append(value)
    return found


def _proxy_inputs(task: Any, case: Any, device: str) -> tuple[tuple, dict, int]:
    """Inputs of `case` with its dynamic keys set to a proxy that no other size or int of the case equals
    (a proxy the case's inputs cannot take, a batch larger than its request pool say, is skipped)."""
    if case.is_captured or not any(k in case.params for k in task.dynamic):
        args, kwargs = task.make_inputs(case, 0, device)
        return args, kwargs, 0
    built: dict[int, tuple[tuple, dict]] = {}
    for proxy in _PROXIES:
        try:
            built[proxy] = task.make_inputs(_proxied(task, case, proxy), 0, device)
        except Exception:  # the inputs do not take this size
            continue
        if len(built) == 2:
            break
    if not built:
        args, kwargs = task.make_inputs(case, 0, device)
        return args, kwargs, 0
    proxies = list(built)
    if len(proxies) == 1:
        return *built[proxies[0]], proxies[0]
    first, second = (_sizes_and_ints(*built[p]) for p in proxies)
    fixed = [a for a, b in zip(first, second, strict=False) if a == b]
    for proxy in proxies:
        if proxy not in fixed and proxy - 1 not in fixed and proxy + 1 not in fixed:
            return *built[proxy], proxy
    return *built[proxies[0]], proxies[0]


def _leaves(values: list[Any]) -> Any:
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from _leaves(list(value))
        elif isinstance(value, dict):
            yield from _leaves(list(value.values()))
        else:
            yield value


# --- tracing -----------------------------------------------------------------------------------------------


def _trace_cases(task: Any, reference: Any, device: str) -> list[Graph]:
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
    ordered = [c for c in task.cases if not c.is_captured] + [c for c in task.cases if c.is_captured]
    if not ordered:
        raise TraceError("the task has no case to trace")
    torch._dynamo.reset()
    compiled = torch.compile(reference, backend=recorder.backend, dynamic=True, fullgraph=True)
    signature = inspect.signature(reference)
    with dynamo_config.patch({**limits, **unspecialised}), fx_config.patch(use_duck_shape=False):
        for case in ordered:
            args, kwargs, proxy = _proxy_inputs(task, case, device)
            arguments = dict(signature.bind(*args, **kwargs).arguments)
            recorder.used = -1
            try:
                with torch.no_grad():
                    result = compiled(*args, **kwargs)
            except TraceError:
                raise
            except Exception as exc:
                cause = _root_cause(exc)
                if isinstance(cause, TraceError):
                    raise cause from exc
                raise TraceError(
                    f"Dynamo cannot trace the reference as one graph: {_one_line(cause)}"
                ) from exc
            if recorder.used < 0:
                raise TraceError(f"case {case.name}: the reference ran without a graph (no tensor work)")
            entry = recorder.graphs[recorder.used]
            entry["cases"].append(case.name)
            if "result" not in entry:
                entry["result"] = _structure(result, recorder.last_outputs, arguments)
                entry["arg_kinds"] = _arg_kinds(arguments)
                entry["dynamic_symbols"] = _dynamic_symbols(task, case, proxy, entry["symbols"], device)
    torch._dynamo.reset()
    return [Graph.from_dict(g) for g in recorder.graphs]


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
        sources = [(_placeholder_source(n), _is_python_number(n)) for n in dynamo_inputs]
        captured: dict[str, Any] = {}

        def forward_compiler(fw: Any, inputs: list[Any]) -> Any:
            captured["graph"] = fw
            return fw

        inner = aot_module_simplified(
            gm, example_inputs, fw_compiler=forward_compiler, keep_inference_input_mutations=True
        )
        context = TracingContext.try_get()
        shape_env = context.fake_mode.shape_env if context is not None and context.fake_mode else None
        entry = _graph_dict(captured["graph"], sources, self.reference)
        entry.update(_shape_env_facts(shape_env))
        entry["cases"] = []
        self.graphs.append(entry)

        def run(*inputs: Any) -> Any:
            self.used = index
            outputs = inner(*inputs)
            self.last_outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            return outputs

        return run


def _placeholder_source(node: Any) -> str:
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    if source is None:
        raise TraceError(f"graph input {node.name} has no source among the reference's arguments")
    return source.name() if callable(source.name) else str(source.name)


def _is_python_number(node: Any) -> bool:
    """A Python number Dynamo passes to the graph as a 0-d tensor (an unspecialised float)."""
    return bool(getattr(node.meta.get("grapharg"), "pass_arg_as_tensor", False))


def _host_expression(source: str) -> str | None:
    """`L['x'].size()[0]` -> `x.shape[0]`; None for what host code cannot name (globals, closures)."""
    match = re.fullmatch(r"L\['(\w+)'\](.*)", source)
    if match is None:
        return None
    rest = match.group(2)
    for pattern, replacement in _SOURCE_PATTERNS:
        rest = pattern.sub(replacement, rest)
    if not re.fullmatch(r"(\.shape\[\d+\]|\.stride\(\d+\)|\.storage_offset\(\)|\[\d+\])*", rest):
        return None
    return match.group(1) + rest


def _global_value(source: str, reference: Any) -> Any:
    match = re.fullmatch(r"G\['(\w+)'\]", source)
    if match is None or match.group(1) not in reference.__globals__:
        raise TraceError(
            f"graph input {source} is neither an argument of the reference nor a module constant"
        )
    value = reference.__globals__[match.group(1)]
    if not isinstance(value, (int, float, bool)):
        raise TraceError(f"the reference reads the module global {match.group(1)} ({type(value).__name__})")
    return value


def _graph_dict(fw: Any, sources: list[tuple[str, bool]], reference: Any) -> dict[str, Any]:
    import torch

    placeholders = [n for n in fw.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(sources):
        raise TraceError("AOTAutograd's graph has other inputs than Dynamo's (parameters or buffers)")
    inputs: list[dict[str, Any]] = []
    names: set[str] = set()
    for node, (source, number) in zip(placeholders, sources, strict=True):
        names.add(node.name)
        inputs.append(_placeholder_dict(node, source, number, reference))
    nodes: list[dict[str, Any]] = []
    mutations: list[list[Any]] = []
    outputs: list[Any] = []
    written: dict[str, str] = {}  # a copy_ into an input -> the input (a returned copy_ returns the input)
    for node in fw.graph.nodes:
        if node.op == "output":
            result = node.args[0]
            outputs = [_encode(a) for a in (result if isinstance(result, (list, tuple)) else [result])]
            outputs = [
                {"node": written[o["node"]]} if _is_ref(o) and o["node"] in written else o for o in outputs
            ]
            continue
        if node.op == "get_attr":
            inputs.append(_constant_dict(node.name, getattr(fw, str(node.target))))
            names.add(node.name)
            continue
        if node.op != "call_function":
            continue
        value = node.meta.get("val")
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
            continue  # size arithmetic: its uses carry the expression itself
        target = _target_name(node.target)
        if target == "aten.copy_.default" and getattr(node.args[0], "name", None) in names:
            mutations.append([node.args[0].name, _encode(node.args[1])])
            written[node.name] = node.args[0].name
            continue
        nodes.append(
            {
                "name": node.name,
                "target": target,
                "args": [_encode(a) for a in node.args],
                "kwargs": {k: _encode(v) for k, v in node.kwargs.items()},
                "outputs": _metas(value),
            }
        )
    return {"placeholders": inputs, "nodes": nodes, "outputs": outputs, "mutations": mutations}


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and "node" in value


def _constant_dict(name: str, value: Any) -> dict[str, Any]:
    """A tensor constant of the graph (a Python number the reference turned into a tensor)."""
    import torch

    if not torch.is_tensor(value) or value.numel() != 1:
        raise TraceError("the reference computes with a constant tensor of more than one element")
    number = value.item()
    return {"name": name, "kind": "const", "source": "", "value": number}


def _placeholder_dict(node: Any, source: str, number: bool, reference: Any) -> dict[str, Any]:
    import torch

    value = node.meta.get("val")
    if source.startswith("G["):
        return {"name": node.name, "kind": "const", "source": "", "value": _global_value(source, reference)}
    expr = _host_expression(source)
    if expr is None:
        raise TraceError(f"graph input {source} is not an expression of the reference's arguments")
    if isinstance(value, (torch.SymInt, int)):
        text = sym_text(value.node.expr) if isinstance(value, torch.SymInt) else str(value)
        return {"name": node.name, "kind": "symint", "source": expr, "symbol": text}
    if isinstance(value, (torch.SymFloat, float)):
        return {
            "name": node.name,
            "kind": "scalar",
            "source": expr,
            "meta": {"shape": [], "dtype": "float64"},
        }
    if torch.is_tensor(value):
        kind = "scalar" if number else "tensor"
        return {"name": node.name, "kind": kind, "source": expr, "meta": _metas(value)[0]}
    raise TraceError(f"graph input {source} is a {type(value).__name__}, which a kernel cannot take")


def _shape_env_facts(shape_env: Any) -> dict[str, Any]:
    if shape_env is None:
        return {"symbols": {}, "hints": {}, "guards": []}
    symbols: dict[str, str] = {}
    for symbol, found in shape_env.var_to_sources.items():
        for source in found:
            expr = _host_expression(source.name() if callable(source.name) else str(source.name))
            if expr is not None:
                symbols[str(symbol)] = expr
                break
    values = getattr(shape_env, "backed_var_to_val", None) or shape_env.var_to_val
    hints = {str(s): int(v) for s, v in values.items() if _is_int(v)}
    guards = []
    for guard in shape_env.guards:
        try:
            guards.append(sym_text(guard.expr))
        except TraceError:
            continue
    return {"symbols": symbols, "hints": hints, "guards": guards}


def _is_int(value: Any) -> bool:
    try:
        return int(value) == value
    except (TypeError, ValueError):
        return False


def _metas(value: Any) -> list[dict[str, Any]]:
    import torch

    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _metas(v)]
    if torch.is_tensor(value):
        shape = [sym_text(d.node.expr) if isinstance(d, torch.SymInt) else str(int(d)) for d in value.shape]
        return [{"shape": shape, "dtype": str(value.dtype).removeprefix("torch.")}]
    return []


def _target_name(target: Any) -> str:
    import operator

    if target is operator.getitem:
        return "getitem"
    return str(target)


def _encode(value: Any) -> Any:
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        meta = value.meta.get("val")
        if isinstance(meta, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return {"sym": sym_text(meta.node.expr)}
        if isinstance(meta, (bool, int, float)):
            return meta
        return {"node": value.name}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"sym": sym_text(value.node.expr)}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"opaque": str(value)}


def sym_text(expr: Any) -> str:
    """Sympy text of a size expression with torch's own functions spelled in plain sympy."""
    import sympy

    def plain(e: Any) -> Any:
        if not getattr(e, "args", ()):
            return e
        args = [plain(a) for a in e.args]
        name = type(e).__name__
        if name == "FloorDiv":
            return sympy.floor(args[0] / args[1])
        if name in ("CleanDiv", "IntTrueDiv", "FloatTrueDiv", "TruncToFloat"):
            return args[0] / args[1] if len(args) == 2 else args[0]
        if name == "CeilDiv":
            return sympy.ceiling(args[0] / args[1])
        if name in ("PythonMod", "Mod"):
            return sympy.Mod(args[0], args[1])
        if name == "ModularIndexing":
            return sympy.Mod(sympy.floor(args[0] / args[1]), args[2])
        if name in ("Identity", "ToFloat", "TruncToInt", "FloorToInt", "RoundToInt"):
            return args[0]
        if isinstance(e, (sympy.Basic,)) and type(e).__module__.startswith("sympy"):
            return e.func(*args)
        raise TraceError(f"a size expression uses {name}, which the generator does not read")

    return str(plain(expr))


# --- the result and the arguments -------------------------------------------------------------------------


def _structure(value: Any, outputs: list[Any], arguments: dict[str, Any]) -> OutputNode:
    import torch

    if torch.is_tensor(value):
        for index, output in enumerate(outputs):
            if output is value:
                return {"out": index}
        for name, argument in arguments.items():
            if argument is value:
                return {"arg": name}
        raise TraceError("the reference returns a tensor that is neither a graph output nor an argument")
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"const": repr(value)}
    if type(value) is tuple:
        return {"tuple": [_structure(v, outputs, arguments) for v in value]}
    if type(value) is list:
        return {"list": [_structure(v, outputs, arguments) for v in value]}
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return {"dict": [[k, _structure(v, outputs, arguments)] for k, v in value.items()]}
    raise TraceError(f"the reference returns a {type(value).__name__}, which a candidate cannot rebuild")


def _arg_kinds(arguments: dict[str, Any]) -> dict[str, str]:
    import torch

    kinds = {}
    for name, value in arguments.items():
        if torch.is_tensor(value):
            kinds[name] = f"tensor:{str(value.dtype).removeprefix('torch.')}"
        elif value is None:
            kinds[name] = "none"
        elif isinstance(value, bool):
            kinds[name] = f"bool:{value}"
        elif isinstance(value, str):
            kinds[name] = f"str:{value}"
        elif isinstance(value, int):
            kinds[name] = "int"
        elif isinstance(value, float):
            kinds[name] = "float"
        else:
            kinds[name] = type(value).__name__
    return kinds


def _dynamic_symbols(task: Any, case: Any, proxy: int, symbols: dict[str, str], device: str) -> list[str]:
    """Symbols whose host expression changes when the case's dynamic keys change."""
    if not proxy:
        return []
    import inspect

    signature = inspect.signature(task.load_reference())
    values = [None, None]
    for value in (proxy, *(p for p in _PROXIES if p != proxy)):
        try:
            args, kwargs = task.make_inputs(_proxied(task, case, value), 0, device)
        except Exception:
            continue
        values[0 if value == proxy else 1] = dict(signature.bind(*args, **kwargs).arguments)
        if values[1] is not None:
            break
    if values[0] is None or values[1] is None:
        return []
    dynamic = []
    for symbol, expr in symbols.items():
        try:
            first, second = (eval(expr, {"__builtins__": {}}, v) for v in values)
        except Exception:
            continue
        if first != second:
            dynamic.append(symbol)
    return dynamic


def _signature(path: Path, entry: str) -> tuple[str, str, tuple[str, ...]]:
    tree = ast.parse(path.read_text())
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if fn is None:
        raise TraceError(f"{path} defines no top-level function {entry}")
    params = tuple(a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs])
    if fn.args.vararg is not None or fn.args.kwarg is not None:
        raise TraceError(f"{entry} takes *args or **kwargs, which a kernel entry cannot mirror")
    # Names, kinds and defaults are the signature a caller sees; the annotations name engine types
    # (torch.LongTensor, engine classes) that a candidate need not and should not read.
    for argument in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
        argument.annotation = None
    return ast.unparse(fn.args), "", params


def _root_cause(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or getattr(exc, "inner_exception", None) is not None:
        exc = getattr(exc, "inner_exception", None) or exc.__cause__  # type: ignore[assignment]
    return exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True)
    options = parser.parse_args(argv)
    report = trace_task(options.task, options.device)
    Path(options.out).write_text(report.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
