"""Host preparation (views, contiguous / clone copies, float casts) is allowed and listed; compute under any
name (an alias of a torch.Tensor method, getattr, a cast that rounds or compares) is caught — by the static
checks where the source shows it, by the op recorder always."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from evaluators.guards.audit import Attributor
from evaluators.guards.host_ops import HostOp, cast_problem, tensor_method, torch_function
from evaluators.guards.kernels import analyse
from evaluators.guards.op_recorder import OpRecorder
from evaluators.static.checks import check_static, host_preparation
from evaluators.task import load_task

ROOT = Path(__file__).parents[2]
SCALE_ADD = load_task(ROOT / "tests" / "adversarial" / "tasks" / "scale_add")  # float32
SILU = load_task(ROOT / "examples" / "tasks" / "silu_and_mul")  # bf16 and fp32 cases

KERNEL = """
import functools
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    value = tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, value, mask=mask)


def _launch(x, y, out, alpha):
    n = out.numel()
    _k[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out
"""


def _scan(body: str, task=SCALE_ADD):
    return check_static(KERNEL + textwrap.dedent(body), task)


def _classes(report) -> set[int]:
    return {f.number for f in report.findings}


# --- what an op does -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "args", "kind"),
    [
        ("contiguous", (), HostOp.COPY),
        ("float", (), HostOp.COPY),
        ("half", (), HostOp.COPY),
        ("bfloat16", (), HostOp.COPY),
        ("clone", (), HostOp.COPY),
        ("flatten", (), HostOp.COPY),  # of a non-contiguous tensor: a layout copy
        ("to", (torch.float32,), HostOp.COPY),
        ("view", (), HostOp.VIEW),
        ("reshape", (), HostOp.VIEW),
        ("unsqueeze", (), HostOp.VIEW),
        ("transpose", (), HostOp.VIEW),
        ("permute", (), HostOp.VIEW),
        ("chunk", (), HostOp.VIEW),
        ("view", (torch.int32,), HostOp.VIEW),  # a bit-cast view
        ("numel", (), HostOp.METADATA),
        ("data_ptr", (), HostOp.METADATA),
        ("item", (), HostOp.METADATA),
        ("new_empty", (), HostOp.ALLOCATION),
        ("sum", (), HostOp.COMPUTE),
        ("add", (), HostOp.COMPUTE),
        ("mul_", (), HostOp.COMPUTE),
        ("sigmoid", (), HostOp.COMPUTE),
        ("to", (torch.bool,), HostOp.COMPUTE),  # compares with zero
        ("bool", (), HostOp.COMPUTE),
        ("to", ("cpu",), HostOp.COMPUTE),  # a move between devices, not layout
        ("tolist", (), HostOp.COMPUTE),
        ("numpy", (), HostOp.COMPUTE),
        ("_neg_view", (), HostOp.COMPUTE),  # a lazy negation
    ],
)
def test_a_tensor_method_is_judged_by_the_aten_op_it_runs(method: str, args: tuple, kind: HostOp) -> None:
    verdict = tensor_method(method, args)
    assert verdict is not None and verdict.kind == kind, verdict


def test_casts_that_round_or_compare_are_compute_and_downcasts_are_marked() -> None:
    assert cast_problem(torch.float32, torch.bfloat16) == ""
    assert cast_problem(torch.int32, torch.int64) == ""
    assert "rounds" in cast_problem(torch.float32, torch.int32)
    assert "bool" in cast_problem(torch.int64, torch.bool)
    half = tensor_method("half")
    assert half is not None and half.lowers_float32
    double = tensor_method("double")
    assert double is not None and not double.lowers_float32


def test_torch_functions_of_layout_are_allowed_and_compute_is_not() -> None:
    for name in ("reshape", "flatten", "transpose", "permute", "unsqueeze", "clone", "narrow"):
        verdict = torch_function(name)
        assert verdict is not None and verdict.allowed, (name, verdict)
    for name in ("add", "cat", "sigmoid", "arange"):
        verdict = torch_function(name)
        assert verdict is not None and verdict.kind == HostOp.COMPUTE, (name, verdict)


# --- the static checks -----------------------------------------------------------------------------------


def test_shipped_preparation_idioms_pass_statically_and_are_listed() -> None:
    body = """
    def silu_and_mul(x):
        gate, up = x.chunk(2, -1)
        gate = gate.float().contiguous()
        up = up.to(torch.float32).reshape(-1).view(gate.shape)
        flat = torch.flatten(x.transpose(0, 1).contiguous())
        out = torch.empty_like(gate)
        out = _launch(gate, up, out, 1.0)
        return out.to(x.dtype).unsqueeze(0).squeeze(0)
    """
    report = _scan(body, SILU)
    assert report.findings == [] and report.errors == [], report.findings
    shown = " ".join(report.preparation)
    for piece in ("gate.float()", "up.to(torch.float32)", "out.to(x.dtype)", "contiguous()"):
        assert piece in shown, report.preparation
    assert "view(" not in shown  # pure views are not worth a note
    assert host_preparation(KERNEL + textwrap.dedent(body), SILU) == report.preparation


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("g = torch.Tensor.add\ndef scale_add(x, y, alpha):\n    return g(x, y)\n", "torch.Tensor.add"),
        ("from torch import Tensor as T\ndef scale_add(x, y, alpha):\n    return T.mul(x, alpha)\n", "mul"),
        ("def scale_add(x, y, alpha):\n    return x.to(torch.float32).sum()\n", ".sum()"),
        ("def scale_add(x, y, alpha):\n    return getattr(x, 'add')(y)\n", "getattr"),
        ("def scale_add(x, y, alpha):\n    return x.to(torch.bool)\n", "bool"),
        ("def scale_add(x, y, alpha):\n    return x.contiguous().tolist()\n", ".tolist()"),
        ("def scale_add(x, y, alpha):\n    return torch.cat([x, y])\n", "torch.cat"),
        ("def scale_add(x, y, alpha):\n    return x._neg_view().resolve_neg()\n", "_neg_view"),
    ],
)
def test_compute_under_an_alias_or_behind_preparation_is_caught_statically(body: str, fragment: str) -> None:
    report = _scan(body)
    assert 11 in _classes(report), report.findings
    assert any(fragment in f.evidence for f in report.findings if f.number == 11), report.findings


def test_a_cast_below_float32_is_a_precision_downgrade_in_a_float32_task_only() -> None:
    body = "def scale_add(x, y, alpha):\n    return _launch(x.half(), y.to(torch.bfloat16), x, alpha)\n"
    assert _classes(_scan(body)) == {10}
    silu = body.replace("def scale_add(x, y, alpha)", "def silu_and_mul(x, y, alpha)")
    assert _classes(_scan(silu, SILU)) == set()


def test_a_builtin_containers_method_is_no_tensor_op() -> None:
    body = """
    def scale_add(x, y, alpha):
        seen = set()
        seen.add(x.numel())
        order = [3, 1]
        order.sort()
        return _launch(x, y, torch.empty_like(x), alpha)
    """
    assert _scan(body).findings == []


def test_a_cache_of_device_facts_is_allowed_a_cache_of_buffers_is_not() -> None:
    device_facts = """
    SMS = {(9, 0): 132}

    @functools.lru_cache
    def get_device_props(device=None):
        if device is None:
            device = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(device)
        return dict(sms=SMS.get((props.major, props.minor), 32), count=props.multi_processor_count)

    def scale_add(x, y, alpha):
        return _launch(x, y, torch.empty_like(x), alpha)
    """
    assert _scan(device_facts).findings == []
    allocator = """
    @functools.lru_cache
    def buffer(n, device):
        return torch.empty(n, device=device)

    def scale_add(x, y, alpha):
        return _launch(x, y, buffer(x.numel(), x.device), alpha)
    """
    assert 7 in _classes(_scan(allocator))
    keeps_argument = """
    @functools.cache
    def keep(key, out):
        return out

    def scale_add(x, y, alpha):
        return _launch(x, y, keep(x.numel(), torch.empty_like(x)), alpha)
    """
    assert 7 in _classes(_scan(keeps_argument))


# --- the runtime op recorder -----------------------------------------------------------------------------


def _load(tmp_path: Path, source: str):
    path = tmp_path / "cand.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location("kb_host_prep_candidate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, Attributor(str(path))


RUNTIME = """
import torch

add = torch.Tensor.add


def prepared(x, w):
    a = x.t().contiguous().float()
    b = w.to(torch.float32).view(1, -1).expand(a.shape[0], -1).reshape(a.shape).clone()
    c = x.flatten().unsqueeze(0).to(torch.bfloat16)
    out = torch.empty_like(a)
    out.copy_(b)
    return out.to(x.dtype), c


def aliased(x, w):
    return add(x.float(), w.float())


def hidden_in_a_cast(x, w):
    return x.to(torch.float32).sum()


def rounds(x, w):
    return x.float().to(torch.int32)


def lazy_negation(x, w):
    return x._neg_view().resolve_neg().contiguous()


def downcast(x, w):
    return x.float().half()
"""


def test_the_recorder_allows_preparation_and_lists_it(tmp_path: Path) -> None:
    module, attributor = _load(tmp_path, RUNTIME)
    x = torch.randn(8, 8, dtype=torch.bfloat16)
    w = torch.randn(8, dtype=torch.bfloat16)
    with OpRecorder(attributor) as recorder:
        module.prepared(x, w)
    assert recorder.violations == [] and recorder.downcasts == []
    shown = recorder.describe_preparation()
    assert "aten._to_copy" in shown and "cast bfloat16 -> float32" in shown and "aten.clone" in shown
    assert "cand.py:" in shown


@pytest.mark.parametrize(
    ("function", "op"),
    [
        ("aliased", "aten.add"),
        ("hidden_in_a_cast", "aten.sum"),
        ("rounds", "float -> integer"),
        ("lazy_negation", "aten."),
    ],
)
def test_the_recorder_catches_compute_whatever_reached_it(tmp_path: Path, function: str, op: str) -> None:
    module, attributor = _load(tmp_path, RUNTIME)
    x = torch.randn(8, 8)
    with OpRecorder(attributor) as recorder:
        getattr(module, function)(x, torch.randn(8, 8))
    assert recorder.violations, recorder.describe_preparation()
    assert op in recorder.describe(), recorder.describe()


def test_the_recorder_lets_host_code_compute_with_tensors_the_task_keeps_on_the_cpu(tmp_path: Path) -> None:
    module, attributor = _load(tmp_path, RUNTIME)
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    with OpRecorder(attributor) as host:
        host.host_storages = {x.untyped_storage().data_ptr()}
        module.hidden_in_a_cast(x, w)  # x.sum(): x is host data, as in the reference
    assert host.violations == [], host.describe()
    with OpRecorder(attributor) as mixed:
        mixed.host_storages = {x.untyped_storage().data_ptr()}
        module.aliased(x, w)  # x + w: w is no host tensor
    assert "aten.add" in mixed.describe()


def test_the_static_checks_let_host_code_compute_with_a_tensor_kept_on_the_cpu(monkeypatch) -> None:
    import evaluators.static.checks as checks

    monkeypatch.setattr(checks, "host_arguments", lambda task: frozenset({"lens_cpu"}))
    body = """
    def f(x, y, out, lens_cpu, lens, n):
        bound = int(lens_cpu[:n].max())
        return _launch(x, y, out, bound)
    """
    assert _classes(_scan(body)) == set()
    assert 11 in _classes(_scan(body.replace("lens_cpu[:n]", "lens[:n]")))


def test_the_recorder_marks_downcasts_in_a_float32_task(tmp_path: Path) -> None:
    module, attributor = _load(tmp_path, RUNTIME)
    x = torch.randn(8, 8)
    with OpRecorder(attributor, float32_task=True) as strict:
        module.downcast(x, x)
    assert strict.violations == [] and "float32 -> float16" in strict.describe_downcasts()
    with OpRecorder(attributor, float32_task=False) as lenient:
        module.downcast(x, x)
    assert lenient.downcasts == []


def test_aten_copy_kernels_are_not_foreign_but_math_kernels_are() -> None:
    def event(name: str) -> SimpleNamespace:
        return SimpleNamespace(name=name, device_type="DeviceType.CUDA", device_resource_id=7)

    copy = (
        "void at::native::unrolled_elementwise_kernel<"
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const"
        "::{lambda(c10::BFloat16)#1}>"
    )
    # torch 2.11 on an H200: a float32 -> bfloat16 cast (`out.to(x.dtype)`) runs a kernel of its own.
    cast = (
        "void at::native::vectorized_elementwise_kernel<8, "
        "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}>"
    )
    events = [
        event(copy),
        event(cast),
        event("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>"),
        event("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"),
        event("_k"),
    ]
    report = analyse(events, {"_k"})
    assert len(report.foreign) == 2 and not any("_copy_kernel" in name for name in report.foreign)
