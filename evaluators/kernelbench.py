"""KernelBench problems as kernelbot Tasks.

A KernelBench problem file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`, with the
sizes as module-level constants. The adapter writes a task directory around it:

    problem.py     the problem file, verbatim
    reference.py   def forward(<forward's inputs>, *, <parameters and buffers>): Model.forward as a function
    inputs.py      make_inputs: sets the case's constants, seeds torch, calls get_inputs / get_init_inputs and
                   builds the Model to hand its parameters over as keyword tensors
    task.toml      one case holding the problem's integer constants; batch-like ones are `dynamic`

Parameters become arguments because a kernelbot candidate is a function, not a module: the candidate gets
exactly the weights the reference uses. Only the file's AST is read here; the problem's code first runs when
the evaluator imports the task.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

import tomli_w

from evaluators.errors import TaskError
from evaluators.task import Task, load_task

ENTRY = "forward"
# Constants that vary at serving time: perturbed by the evaluator's hidden cases.
_DYNAMIC_NAMES = {"batch_size", "batch", "bs", "num_tokens", "tokens", "seq_len", "seq_length", "seqlen"}
# KernelBench judges float32 at 1e-2; against a float64 reference 1e-4 still leaves room for reordered sums.
_FLOAT32_TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}

_REFERENCE = '''"""KernelBench problem {name}, adapted by kernelbot: Model.forward as a function; the model's
parameters and buffers are keyword arguments, so a candidate receives the very weights the reference uses."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

STATE = {state!r}  # keyword argument -> parameter / buffer name in Model


def _load_problem():
    problem_file = Path(__file__).with_name("problem.py")
    spec = importlib.util.spec_from_file_location("kb_kernelbench_{digest}", problem_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_problem = _load_problem()
_model = None


def {entry}({signature}):
    global _model
    if _model is None:
        with torch.random.fork_rng(devices=[]):
            _model = _problem.Model(*_problem.get_init_inputs())
    state = {{STATE[key]: value for key, value in {state_dict}.items()}}
    return torch.func.functional_call(_model, state, ({args}))
'''

_INPUTS = '''"""Inputs of KernelBench problem {name}: the problem's own get_inputs / get_init_inputs under the
case's constants and a torch seed; the Model's parameters and buffers are returned as keyword tensors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

STATE = {state!r}  # keyword argument -> parameter / buffer name in Model


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    problem_file = Path(__file__).with_name("problem.py")
    spec = importlib.util.spec_from_file_location("kb_kernelbench_inputs", problem_file)
    problem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(problem)
    for key, value in case.items():
        setattr(problem, key, value)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        inputs = list(problem.get_inputs())
        model = problem.Model(*problem.get_init_inputs())
    named = dict(model.named_parameters())
    named.update(dict(model.named_buffers()))
    args = tuple(x.detach().to(device) if isinstance(x, torch.Tensor) else x for x in inputs)
    kwargs = {{key: named[name].detach().to(device) for key, name in STATE.items()}}
    return args, kwargs
'''


def _default_cache_dir() -> Path:
    home = os.environ.get("KERNELBOT_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "kernelbot")
    return Path(home) / "kernelbench"


def _find(tree: ast.Module, path: Path) -> tuple[ast.ClassDef, ast.FunctionDef]:
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing = [name for name in ("get_inputs", "get_init_inputs") if name not in functions]
    if model is None or missing:
        what = ", ".join((["class Model"] if model is None else []) + [f"def {m}()" for m in missing])
        raise TaskError(f"{path} is not a KernelBench problem: it defines no {what}")
    forward = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        raise TaskError(f"{path}: class Model has no forward method")
    return model, forward


def _forward_inputs(forward: ast.FunctionDef, path: Path) -> list[str]:
    args = forward.args
    if args.vararg or args.kwonlyargs or args.kwarg:
        raise TaskError(
            f"{path}: Model.forward takes *args / keyword-only / **kwargs parameters; only plain positional "
            "inputs can be adapted (name each input)"
        )
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if not names or names[0] != "self":
        raise TaskError(f"{path}: Model.forward must be a method (first parameter self)")
    return names[1:]


def _constants(tree: ast.Module) -> dict[str, int]:
    """Module-level `NAME = <int>` assignments: the problem's sizes."""
    found: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Constant) and type(value.value) is int:
                found[node.targets[0].id] = value.value
    return found


def _state_names(path: Path, source: str) -> dict[str, str]:
    """Keyword name -> parameter/buffer name, by building the model on the meta device (no memory)."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"kb_kernelbench_probe_{abs(hash(source))}", path)
    if spec is None or spec.loader is None:
        raise TaskError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        try:
            with torch.device("meta"):
                model = module.Model(*module.get_init_inputs())
        except Exception:  # some __init__ code cannot run on meta tensors: build it for real
            with torch.random.fork_rng(devices=[]):
                model = module.Model(*module.get_init_inputs())
    except Exception as exc:  # the problem's own code fails: report it as the task's fault
        raise TaskError(
            f"{path}: building Model(*get_init_inputs()) fails: {type(exc).__name__}: {exc}"
        ) from exc
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    return {re.sub(r"\W", "_", n.replace(".", "__")): n for n in names}


def _task_name(path: Path) -> str:
    stem = re.sub(r"\W+", "_", path.stem).strip("_").lower()
    return f"kernelbench_{stem}" if stem else "kernelbench"


def load_kernelbench(path: Path, cache_dir: Path | None = None) -> Task:
    """Materialise the KernelBench problem at `path` as a task directory (cached by content) and load it."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"KernelBench problem {path} does not exist")
    source = path.read_text()
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskError(f"{path} does not parse: line {exc.lineno}: {exc.msg}") from exc
    _, forward = _find(tree, path)
    inputs = _forward_inputs(forward, path)
    state = _state_names(path, source)
    clashes = sorted(set(state) & set(inputs))
    if clashes:
        state = {f"p_{k}" if k in clashes else k: v for k, v in state.items()}
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    name = _task_name(path)
    target = Path(cache_dir or _default_cache_dir()) / f"{name}_{digest}"
    if not (target / "task.toml").is_file():
        _write_task(target, name, path, source, inputs, state, _constants(tree), digest)
    return load_task(target)


def _write_task(
    target: Path,
    name: str,
    path: Path,
    source: str,
    inputs: list[str],
    state: dict[str, str],
    constants: dict[str, int],
    digest: str,
) -> None:
    keywords = ", ".join(state)
    signature = ", ".join(inputs) + (f", *, {keywords}" if state else "")
    state_dict = "{" + ", ".join(f"{k!r}: {k}" for k in state) + "}"
    call_args = ", ".join(inputs) + ("," if len(inputs) == 1 else "")
    reference = _REFERENCE.format(
        name=path.name,
        state=state,
        digest=digest,
        entry=ENTRY,
        signature=signature,
        state_dict=state_dict,
        args=call_args,
    )
    toml = {
        "name": name,
        "entry": ENTRY,
        "regime": "graph",
        "description": f"KernelBench problem {path.name}: Model.forward with its weights as arguments.",
        "dynamic": sorted(k for k in constants if k.lower() in _DYNAMIC_NAMES),
        "source": {"repo": "KernelBench", "path": str(path.name), "qualname": "Model.forward"},
        "tolerance": {"float32": dict(_FLOAT32_TOLERANCE)},
        "cases": [{"name": "default", **constants}],
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (staging / "problem.py").write_text(source)
        (staging / "reference.py").write_text(reference)
        (staging / "inputs.py").write_text(_INPUTS.format(name=path.name, state=state))
        (staging / "task.toml").write_text(tomli_w.dumps(toml))
        try:
            os.replace(staging, target)  # atomic: a concurrent load sees all files or none
        except OSError:
            if not (target / "task.toml").is_file():  # not a lost race with another loader: a real error
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
