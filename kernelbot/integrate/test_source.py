"""Renders the generated unit test (templates/test.py.j2) in the repository's style: pytest functions, or a
unittest class deriving the profile's base class (SGLang's CustomTestCase) when the tree has it.

The test needs nothing from kernelbot: it builds the task's inputs itself (inputs_source) and compares the
original code with the kernel over the task's cases, other values of its dynamic sizes and the sizes of every
model the engine serves that uses the function (served_shapes), each in every activation dtype the task's
cases were built in (the dtypes the evaluator checked: the guard admits those only). Cases small enough
for Triton's interpreter run everywhere (the interpreter on a machine without a GPU); larger ones run on a
CUDA GPU only, and the file says which is which."""

from __future__ import annotations

import ast
import json
import math
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from evaluators.correctness.tolerances import DEFAULT_TOLERANCES, tolerance_for
from evaluators.static.facts import host_arguments
from kernelbot.engines.model import Profile
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.inputs_source import needs_math, render_make_inputs
from kernelbot.integrate.naming import snake
from kernelbot.integrate.served_shapes import (
    activation_dtype,
    checked_dtypes,
    dtype_key,
    served_cases,
    unchecked_dtypes,
)
from kernelbot.integrate.task_view import InputSpecSource, TaskView
from kernelbot.integrate.templates_env import environment, fit_comments


@dataclass(frozen=True)
class TestSubject:
    """What the test exercises: the rewritten function in `source_module` and the kernel module."""

    __test__ = False  # not a test class, whatever pytest infers from its name

    source_module: str
    kernel_module: str
    entry: str
    guard: str
    passed_attributes: dict[str, str]  # entry parameter -> self attribute, for the attributes it reads
    # How the engine reaches the kernel (kernelbot.engines.convention.TestHook): the method called on the
    # kernel path ("" or the function's own name: the function itself, behind its guard), and the class it
    # is called on, (module, class), when not the function's own (LMDeploy's Triton<Op>Impl).
    kernel_method: str = ""
    kernel_owner: tuple[str, str] | None = None
    # The entry's parameters where it takes fewer than the guard (drop_unread_params); empty: all of them.
    kernel_parameters: tuple[str, ...] = ()


def render_test(
    view: TaskView,
    subject: TestSubject,
    profile: Profile,
    repo: Path,
    other_cases: tuple[Mapping[str, Any], ...],
) -> str:
    context = render_context(view, subject, profile, repo, other_cases)
    width = profile.formatter.line_length
    return fit_comments(environment(width).get_template("test.py.j2").render(**context), width)


def render_context(
    view: TaskView,
    subject: TestSubject,
    profile: Profile,
    repo: Path,
    other_cases: tuple[Mapping[str, Any], ...],
) -> dict[str, Any]:
    """What the test template (and the benchmark's, kernelbot.integrate.bench_source) are rendered from."""
    if view.inputs is None:
        raise IntegrationError(
            f"{view.task.inputs_path} holds no input spec (hand-written or captured inputs): the generated "
            "test builds its inputs from one; re-extract the task with --spec"
        )
    dynamic = ", ".join(view.task.dynamic)
    cases = _cases(view, other_cases)
    sizes = list(dict.fromkeys(k for params, _ in cases for k in params))
    swap = activation_dtype(view.inputs)
    make_inputs = render_make_inputs(view.inputs, sizes, swap)
    # Tensors the engine keeps on the CPU (`seq_lens.cpu()`) stay there in the test and the benchmark.
    on_host = host_arguments(view.task)
    positional = [name for name, kind in view.inputs.order if kind == "positional"]
    host_positions = [i for i, name in enumerate(positional) if name in on_host]
    host_keywords = [name for name, kind in view.inputs.order if kind != "positional" and name in on_host]
    dtypes = checked_dtypes(view) or (_first_float_dtype(view.inputs),)
    small = [(params, note) for params, note in cases if _fits_interpreter(view.inputs, params)]
    large = [(params, note) for params, note in cases if (params, note) not in small]
    base_module, base_class = _base_class(profile, repo)
    parts = view.qualname.split(".")
    owner, method = (parts[-2], parts[-1]) if view.is_method else ("", parts[-1])
    bound = {attr: function for attr, function in view.bound_callables.items()}
    source_names = sorted({owner or method, *bound.values()})
    kernel_method = subject.kernel_method or method
    return {
        "kernel_method": kernel_method,
        "kernel_owner": subject.kernel_owner[1] if subject.kernel_owner else "",
        "kernel_owner_import": (
            f"from {subject.kernel_owner[0]} import {subject.kernel_owner[1]}" if subject.kernel_owner else ""
        ),
        "header": profile.formatter.new_file_header,
        "docstring": _docstring(view, subject, profile, dynamic),
        "unittest": profile.tests.style == "unittest-customtestcase",
        "base_module": base_module,
        "base_class": base_class,
        "needs_math": needs_math(make_inputs),
        "source_module": subject.source_module,
        "source_names": ", ".join(source_names),
        "needs_importlib": profile.kernel.export_from_init,
        "kernel_import": _import_as(subject.kernel_module, "kernel", profile.kernel.export_from_init),
        "source_name_list": source_names,
        "tolerances": _tolerances(view),
        "cases": [(_dict_source(params), note) for params, note in small],
        "gpu_cases": [(_dict_source(params), note) for params, note in large],
        "dtypes": ", ".join(f"torch.{d}" for d in dtypes),
        "swap": swap or "",
        "unchecked": " and ".join(unchecked_dtypes(view)),
        "interpreter_elements": INTERPRETER_ELEMENTS,
        "kernel_module": subject.kernel_module,
        "is_method": view.is_method,
        "owner": owner,
        "owner_snake": snake(owner) if owner else "",
        "method": method,
        "function": method,
        "attributes": _dict_source(subject.passed_attributes),
        "has_attributes": bool(subject.passed_attributes),
        "attribute_defaults": _dict_source(_attribute_defaults(view, subject)),
        "bound": "{" + ", ".join(f'"{a}": {f}' for a, f in bound.items()) + "}" if bound else "",
        "written": repr(list(view.written_attributes)) if view.written_attributes else "",
        "make_inputs": make_inputs,
        "host_arguments": ", ".join(name for name, _ in view.inputs.order if name in on_host),
        "host_positions": _membership("i", host_positions),
        "host_keywords": _membership("k", host_keywords),
        "device_positions": _membership("i", host_positions, negate=True),
        "device_keywords": _membership("k", host_keywords, negate=True),
        "entry": subject.entry,
        "kernel_parameters": repr(subject.kernel_parameters) if subject.kernel_parameters else "",
        "positional": repr(tuple(positional)),
        "guard": subject.guard,
        "outputs": list(view.outputs),
        **_compare_rules(view),
        "test_class": "Test" + "".join(w.capitalize() for w in subject.entry.split("_")),
        "test_function": f"test_{subject.entry}_matches_the_original",
    }


def _membership(variable: str, values: list[Any], negate: bool = False) -> str:
    """`i == 3`, `k in ("a", "b")` (negated: `i != 3`, `k not in (...)`), or "" for no values: the tests
    the templates write for the host arguments."""
    if not values:
        return ""
    if len(values) == 1:
        return f"{variable} {'!=' if negate else '=='} {values[0]!r}"
    return f"{variable} {'not in' if negate else 'in'} ({', '.join(map(repr, values))})"


# Cases whose tensors hold more elements than this in all run on a CUDA GPU only: Triton's interpreter runs
# each program in NumPy, a few seconds for a prefill-sized case.
INTERPRETER_ELEMENTS = 1 << 18


def _cases(view: TaskView, other_cases: tuple[Mapping[str, Any], ...]) -> list[tuple[Mapping[str, Any], str]]:
    """(params, where it comes from): the task's cases, the other values of its dynamic sizes, then each
    served model's sizes at decode and prefill token counts; each set of params once. The spec's dtype key
    is left out: every case runs in every dtype of DTYPES."""
    key = dtype_key(view.inputs)
    runnable = [c for c in view.task.cases if not c.is_captured]
    cases = [(c.params, f"task case {c.name}") for c in runnable]
    dynamic = ", ".join(view.task.dynamic)
    cases += [(params, f"{dynamic} off the task's values") for params in other_cases]
    cases = [({k: v for k, v in params.items() if k != key}, note) for params, note in cases]
    if runnable:
        base = {k: v for k, v in runnable[0].params.items() if k != key}
        for served in served_cases(view, base):
            counts = ", ".join(f"{k} {served.params[k]}" for k in view.task.dynamic if k in served.params)
            note = f"{served.model.name} sizes ({served.model.family})" + (f", {counts}" if counts else "")
            cases.append((served.params, note))
    out: list[tuple[Mapping[str, Any], str]] = []
    for params, note in cases:
        if all(params != p for p, _ in out):
            out.append((params, note))
    return out


def _fits_interpreter(spec: InputSpecSource, params: Mapping[str, Any]) -> bool:
    """Whether the case's spec tensors hold at most INTERPRETER_ELEMENTS elements in all (a shape that
    cannot be evaluated from the sizes alone counts as too large)."""
    total = 0
    scope = {"min": min, "max": max, "int": int, "abs": abs, "math": math, **params}
    for arg in spec.spec.values():
        if "shape" not in arg:
            continue
        try:
            dims = [
                int(eval(d, {"__builtins__": {}}, scope)) if isinstance(d, str) else int(d)
                for d in arg["shape"]
            ]
        except Exception:  # an expression over earlier arguments: not known before the case is built
            return False
        total += math.prod(dims)
    return total <= INTERPRETER_ELEMENTS


def _first_float_dtype(spec: InputSpecSource) -> str:
    for arg in spec.spec.values():
        if "shape" in arg and str(arg.get("dtype", "float32")).startswith(("float", "bfloat")):
            return str(arg.get("dtype", "float32"))
    return "float32"


def _base_class(profile: Profile, repo: Path) -> tuple[str, str]:
    """("module", "Class") of the profile's base class when the tree defines it, else ("", "")."""
    if profile.tests.style != "unittest-customtestcase" or not profile.tests.base_class:
        return "", ""
    module, name = profile.tests.base_class.split(":")
    path = repo / profile.source_root / Path(*module.split(".")).with_suffix(".py")
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return "", ""
    defined = any(isinstance(node, ast.ClassDef) and node.name == name for node in tree.body)
    return (module, name) if defined else ("", "")


def _import_as(module: str, alias: str, exported: bool) -> str:
    """The import binding the kernel module to `alias`. When the package exports the kernel function
    under the module's own name, `from package import module` would bind that function instead."""
    package, _, name = module.rpartition(".")
    if exported:
        return f'{alias} = importlib.import_module("{module}")'
    return f"from {package} import {name} as {alias}" if package else f"import {module} as {alias}"


def _tolerances(view: TaskView) -> list[tuple[str, str, str]]:
    names = list(DEFAULT_TOLERANCES)
    names += [n for n in view.task.tolerances if n not in names]
    out = []
    for name in names:
        tol = tolerance_for(name, view.task)
        out.append((name, repr(2 * tol.atol), repr(2 * tol.rtol)))
    return out


class TieRule(TypedDict):
    values: str  # the output whose values the key's ties follow ("" when none)
    follow: list[str]


class CompareRules(TypedDict):
    unordered: dict[str, list[str]]
    ties: dict[str, TieRule]
    unordered_source: str
    ties_source: str


def _compare_rules(view: TaskView) -> CompareRules:
    """The task's `[[compare.unordered]]` and `[[compare.ties]]` rules (docs/tasks.md), their outputs named as
    the test names them: {"unordered": {key: [values]}, "ties": {key: {"values": name, "follow": [...]}}}.
    A tie rule's followers also take the values of an unordered rule on the same key, as in the evaluator
    (evaluators/correctness/ties.py)."""
    compare = view.task.compare
    unordered = {
        _observed_name(g.key, view): [_observed_name(v, view) for v in g.values] for g in compare.unordered
    }
    ties: dict[str, TieRule] = {}
    for rule in compare.ties:
        key = _observed_name(rule.key, view)
        named = [_observed_name(n, view) for n in rule.followers] + unordered.get(key, [])
        follow = [n for n in dict.fromkeys(named) if n != key]
        values = _observed_name(rule.values, view) if rule.values else ""
        ties[key] = TieRule(values=values, follow=follow)
    # JSON of strings, lists and dicts is Python source in the formatters' double-quote style.
    return {
        "unordered": unordered,
        "ties": ties,
        "unordered_source": json.dumps(unordered),
        "ties_source": json.dumps(ties),
    }


def _observed_name(name: str, view: TaskView) -> str:
    """An output as a task file names it ("return[1]", "1" for "return[1]", an argument the code writes
    into) as the generated test does ("return[1]", "argument 0" / "argument <name>")."""
    if name.isdigit():
        return f"return[{name}]"
    if name.startswith(("return", "self.")) or view.inputs is None:
        return name
    positional = [n for n, kind in view.inputs.order if kind == "positional"]
    if name in positional:
        return f"argument {positional.index(name)}"
    if any(n == name for n, _ in view.inputs.order):
        return f"argument {name}"
    return name


def _attribute_defaults(view: TaskView, subject: TestSubject) -> dict[str, object]:
    defaults: dict[str, object] = {}
    for param in subject.passed_attributes:
        text = view.param(param).default
        if text is None:
            continue
        try:
            defaults[param] = ast.literal_eval(text)
        except ValueError as exc:
            raise IntegrationError(
                f"the default of {param} ({text}) is not a literal the test can hold"
            ) from exc
    return defaults


def _dict_source(values: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f'"{k}": {v!r}' for k, v in values.items()) + "}"


def _docstring(view: TaskView, subject: TestSubject, profile: Profile, dynamic: str) -> str:
    path = view.task.source.path
    width = profile.formatter.line_length
    lines = [
        textwrap.fill(
            f"Tests for `{subject.entry}`, the Triton path of `{view.qualname}`.",
            width=width,
            initial_indent='"""',
        ).removeprefix('"""'),
        "",
        textwrap.fill(
            f"Generated by kernelbot for {path}. Each case builds the same inputs twice and compares the "
            "original PyTorch code with the kernel: the result, every tensor argument afterwards (in-place "
            "writes)"
            + (" and the attributes it sets" if view.written_attributes else "")
            + ". The cases are the task's"
            + (f", other values of the sizes that vary at serving time ({dynamic})" if dynamic else "")
            + " and the sizes of the served models that use the function, each in every dtype of DTYPES. "
            "On a GPU the kernel runs "
            f"through {_gpu_path(view, subject)}, behind its guard; without one, through "
            "Triton's interpreter on the CPU, for the cases in CASES (GPU_CASES are too large for it).",
            width=width,
        ),
    ]
    return "\n".join(lines)


def _gpu_path(view: TaskView, subject: TestSubject) -> str:
    """How the test reaches the kernel on a GPU, in words: the engine's slot for it."""
    method = view.qualname.split(".")[-1]
    if subject.kernel_owner:
        return f"`{subject.kernel_owner[1]}.{subject.kernel_method}`"
    if subject.kernel_method and subject.kernel_method != method:
        owner = view.qualname.rsplit(".", 1)[0]
        return f"`{owner}.{subject.kernel_method}`, compared with `{view.qualname}`"
    return f"`{view.qualname}`"
