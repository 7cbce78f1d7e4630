"""Runtime guards. The Sandbox's audit hook is irrevocable, so it is exercised in a subprocess (one process,
many misbehaving functions of one candidate file); the recorders that leave no global trace run in process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
import venv
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch

from evaluators.guards.audit import HARNESS_PACKAGES, Attributor
from evaluators.guards.kernels import analyse, jit_kernel_names
from evaluators.guards.op_recorder import OpRecorder
from evaluators.guards.roots import interpreter_roots, library_roots, norm_path
from evaluators.guards.snapshots import HarnessSnapshot, ModuleFingerprint, flag_changes, precision_flags
from evaluators.guards.tracer import CodeTracer
from evaluators.result import KernelTime

CANDIDATE = """
import ctypes, os, socket, subprocess, sys, threading, time
import torch
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def legit_kernel():
    x = torch.arange(8.0)
    y = torch.empty_like(x)
    _copy[(1,)](x, y, 8, BLOCK=8)
    assert torch.equal(x, y)


def read_library():
    with open(os.path.join(os.path.dirname(torch.__file__), "__init__.py")) as fh:
        fh.read(10)


def write_file():
    with open(os.environ["KB_SCRATCH"] + "/stolen.txt", "w") as fh:
        fh.write("x")


def read_protected():
    open(os.environ["KB_PROTECTED"] + "/reference.py").read()


def numpy_save():
    import numpy
    numpy.save(os.environ["KB_SCRATCH"] + "/t.npy", numpy.zeros(2))


def putenv():
    os.environ["KB_LEAK"] = "1"


def run_process():
    subprocess.run(["true"])


def start_thread():
    threading.Thread(target=lambda: None).start()


def open_socket():
    socket.socket().connect(("127.0.0.1", 9))


def load_cudart():
    ctypes.CDLL("libcudart.so")


def import_evaluator():
    import evaluators.kernelbench  # noqa: F401


def walk_stack():
    return sys._getframe(1).f_locals


def forge_code_origin():
    code = compile("import os", triton.__file__, "exec")
    exec(code)


def forge_code_from_ast():
    import ast

    exec(compile(ast.parse("import os"), torch.__file__, "exec"))


def forge_code_outside_roots():
    # A library-looking file name that no library root holds (nor any file): its frames would pass for a
    # library's, so the code is refused wherever the name points.
    exec(compile("import os", "/kb-nowhere/site-packages/torch/__init__.py", "exec"))


def read_library_metadata():
    import importlib.metadata

    return importlib.metadata.version("torch")


def import_library_uncached():
    # The driver hides the bytecode cache first, so the import system compiles the module from its text, as
    # it did `from triton.language.extra import libdevice` on the H200's read-only site-packages: the
    # candidate's frame is the nearest one, and that is no forgery.
    import tabnanny

    return tabnanny.check


def walk_traceback():
    try:
        raise ValueError
    except ValueError as exc:
        return exc.__traceback__.tb_frame.f_back.f_locals


def leave_mode_pushed():
    torch.overrides.TorchFunctionMode().__enter__()


def lower_precision():
    torch.set_float32_matmul_precision("medium")


def patch_timer():
    time.perf_counter = lambda: 0.0


def patch_tensor_class():
    torch.Tensor.sum = lambda self, *a, **k: 0
"""

DRIVER = """
import json, os, sys
from pathlib import Path
os.environ["TRITON_INTERPRET"] = "1"
import importlib.util
import torch, triton
from evaluators.guards import Sandbox

cand = Path(sys.argv[1])
protected = Path(sys.argv[2])
sandbox = Sandbox(cand, [protected])
sandbox.install()
with sandbox.armed():
    spec = importlib.util.spec_from_file_location("kb_candidate", cand)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
# The harness itself may write files and start threads: only the candidate is judged.
(Path(os.environ["KB_SCRATCH"]) / "harness.txt").write_text("ok")
results = {"harness": [f.kind for f in sandbox.findings()]}
for name in sys.argv[3:]:
    if name == "import_library_uncached":
        import tempfile
        assert "tabnanny" not in sys.modules
        sys.dont_write_bytecode = True
        # A cache directory that does not exist, inside the interpreter's prefix (a library location, as a
        # real __pycache__ is): no cached bytecode to load.
        sys.pycache_prefix = os.path.join(sys.prefix, "kb-no-pycache-" + os.path.basename(tempfile.mkdtemp()))
    seen = len(sandbox.findings())
    error = ""
    try:
        with sandbox.armed():
            getattr(module, name)()
    except BaseException as exc:
        error = type(exc).__name__
    new = sandbox.findings()[seen:]
    results[name] = {"kinds": [f.kind for f in new], "evidence": [f.evidence for f in new], "error": error}
from evaluators.guards.roots import interpreter_roots
torch_dir = os.path.realpath(os.path.dirname(torch.__file__))
results["_where"] = {"torch": torch_dir, "roots": sorted(interpreter_roots())}
print(json.dumps(results))
"""

SCENARIOS = {
    "legit_kernel": (set(), ""),
    "read_library": (set(), ""),
    "write_file": ({"sandbox_escape"}, "SandboxViolation"),
    "read_protected": ({"sandbox_escape"}, "SandboxViolation"),
    "numpy_save": ({"sandbox_escape"}, "SandboxViolation"),
    "putenv": ({"sandbox_escape"}, "SandboxViolation"),
    "run_process": ({"threads_processes"}, "SandboxViolation"),
    "start_thread": ({"threads_processes"}, "SandboxViolation"),
    "open_socket": ({"sandbox_escape"}, "SandboxViolation"),
    "load_cudart": ({"persisting_l2"}, "SandboxViolation"),
    "import_evaluator": ({"sandbox_escape"}, "SandboxViolation"),
    "walk_stack": ({"sandbox_escape"}, "SandboxViolation"),
    "walk_traceback": ({"sandbox_escape"}, "SandboxViolation"),
    "forge_code_origin": ({"sandbox_escape"}, "SandboxViolation"),
    "forge_code_from_ast": ({"sandbox_escape"}, "SandboxViolation"),
    "forge_code_outside_roots": ({"sandbox_escape"}, "SandboxViolation"),
    "read_library_metadata": (set(), ""),
    "import_library_uncached": (set(), ""),
    "leave_mode_pushed": ({"harness_patch"}, ""),
    "lower_precision": ({"precision_downgrade"}, ""),
    "patch_timer": ({"harness_patch"}, ""),
    "patch_tensor_class": ({"harness_patch"}, ""),
}


def run_driver(root: Path, python: str = sys.executable, env_extra: dict[str, str] | None = None) -> dict:
    """The DRIVER over every scenario in a fresh process of `python`; its JSON results."""
    candidate = root / "candidate.py"
    candidate.write_text(CANDIDATE)
    protected = root / "task"
    protected.mkdir()
    (protected / "reference.py").write_text("def f(x):\n    return x\n")
    scratch = root / "scratch"
    scratch.mkdir()
    driver = root / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "KB_SCRATCH": str(scratch), "KB_PROTECTED": str(protected), "TRITON_INTERPRET": "1"}
    env.update(env_extra or {})
    proc = subprocess.run(
        [python, str(driver), str(candidate), str(protected), *SCENARIOS],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    results["_scratch"] = str(scratch)
    return results


@pytest.fixture(scope="module")
def sandbox_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_driver(tmp_path_factory.mktemp("sandbox"))


def test_the_harness_is_never_blamed(sandbox_run: dict) -> None:
    assert sandbox_run["harness"] == []


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_sandbox_scenario(sandbox_run: dict, scenario: str) -> None:
    expected_kinds, expected_error = SCENARIOS[scenario]
    got = sandbox_run[scenario]
    assert set(got["kinds"]) == expected_kinds, got
    assert got["error"] == expected_error, got
    assert all(
        "candidate.py" in e or "replaced" in e or "flag" in e or "modes" in e for e in got["evidence"]
    ), got


def test_refused_operations_did_not_happen(sandbox_run: dict) -> None:
    scratch = Path(sandbox_run["_scratch"])
    assert not (scratch / "stolen.txt").exists()
    assert not (scratch / "t.npy").exists()
    assert (scratch / "harness.txt").exists()


REPO = Path(__file__).resolve().parents[2]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@pytest.fixture(scope="module", params=["PYTHONPATH", ".pth"])
def relocated_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """torch and triton outside the interpreter's prefixes: a fresh virtual environment with no packages of
    its own (its base the same interpreter) reaches the site-packages that hold them through PYTHONPATH, or
    through a .pth file in its own site-packages."""
    site = os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__)))
    if _under(site, os.path.realpath(sys.base_prefix)):
        pytest.skip(
            "torch is installed under the base interpreter's own prefix: no environment can put it outside"
        )
    root = tmp_path_factory.mktemp("relocated")
    env_dir = root / "env"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    # The repository too: kernelbot's editable install is a .pth file of the site-packages, read only there.
    paths = [site, str(REPO)]
    if request.param == "PYTHONPATH":
        extra = {"PYTHONPATH": os.pathsep.join(paths)}
    else:
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        Path(purelib).mkdir(parents=True, exist_ok=True)
        (Path(purelib) / "kb_libraries.pth").write_text("\n".join(paths) + "\n")
        extra = {"PYTHONPATH": ""}
    (root / "sandbox").mkdir()
    return run_driver(root / "sandbox", python, extra)


def test_the_guards_hold_with_torch_outside_the_interpreters_prefixes(relocated_run: dict) -> None:
    where = relocated_run["_where"]
    assert not any(_under(where["torch"], r) for r in where["roots"]), where  # really elsewhere
    assert relocated_run["harness"] == []
    wrong = {
        name: relocated_run[name]
        for name, (kinds, error) in SCENARIOS.items()
        if set(relocated_run[name]["kinds"]) != kinds or relocated_run[name]["error"] != error
    }
    assert not wrong  # library reads pass, escapes and forged origins (inside or outside the roots) do not
    scratch = Path(relocated_run["_scratch"])
    assert not (scratch / "stolen.txt").exists() and (scratch / "harness.txt").exists()


def test_library_roots_come_from_the_imported_packages_never_the_harness_or_the_task(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for folder in ("fastlib", "fastlib-1.0.dist-info", "evaluators", "notes"):
        (site / folder).mkdir(parents=True)
    (site / "single.py").write_text("")
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "inputs.py").write_text("")

    def module(name: str, path: Path | None = None, file: Path | None = None) -> ModuleType:
        m = ModuleType(name)
        if path is not None:
            m.__path__ = [str(path)]  # type: ignore[attr-defined]
        if file is not None:
            m.__file__ = str(file)
        return m

    modules = {
        "fastlib": module("fastlib", path=site / "fastlib"),
        "fastlib.sub": module("fastlib.sub", path=site / "elsewhere"),  # submodules live in their package
        "single": module("single", file=site / "single.py"),
        "evaluators": module("evaluators", path=site / "evaluators"),  # the harness: never a root
        "kb_task_inputs": module("kb_task_inputs", file=tmp_path / "task" / "inputs.py"),  # protected
        "builtin_like": module("builtin_like"),
    }
    roots = library_roots(HARNESS_PACKAGES, [norm_path(tmp_path / "task")], modules)
    for legit in ("fastlib", "fastlib-1.0.dist-info", "single.py"):
        assert norm_path(site / legit) in roots
    assert not any(r.startswith(norm_path(site / "evaluators")) for r in roots)
    assert not any(r.startswith(norm_path(tmp_path / "task")) for r in roots)
    assert norm_path(site / "notes") not in roots and norm_path(site) not in roots  # only what is imported
    assert interpreter_roots() <= set(roots)


# --- in-process recorders ----------------------------------------------------------------------------


def _load(tmp_path: Path, source: str) -> tuple[ModuleType, Attributor]:
    path = tmp_path / "cand.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location("kb_guard_test_candidate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, Attributor(str(path))


def test_op_recorder_allows_allocation_views_and_triton(tmp_path: Path) -> None:
    module, attributor = _load(
        tmp_path,
        """
        import torch, triton, triton.language as tl
        @triton.jit
        def _copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs))
        def honest(x):
            y = torch.empty_like(x)
            z = torch.zeros(4, device=x.device)
            z.fill_(1.0)
            _copy[(1,)](x.view(-1)[:16], y.view(-1)[:16], BLOCK=16)
            return y.t()
        def cheat(x):
            x.fill_(0.0)
            return torch.sigmoid(x).clone()
        """,
    )
    x = torch.randn(4, 4)
    with OpRecorder(attributor) as honest:
        module.honest(x)
    assert honest.violations == []
    with OpRecorder(attributor) as cheat:
        module.cheat(x)
    ops = {v.op for v in cheat.violations}
    assert {"aten.fill_.Scalar", "aten.sigmoid.default"} <= ops  # the clone is preparation
    assert all("cand.py:" in v.where for v in cheat.violations)


def test_code_tracer_sees_the_reference_and_the_evaluator(tmp_path: Path) -> None:
    reference = tmp_path / "reference.py"
    reference.write_text("def ref(x):\n    return x + 1\n")
    spec = importlib.util.spec_from_file_location("kb_guard_test_reference", reference)
    assert spec is not None and spec.loader is not None
    ref_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref_module)
    module, attributor = _load(
        tmp_path,
        """
        def via_reference(ref, x):
            return ref(x)
        def via_evaluator(x):
            from evaluators.correctness.tolerances import tolerance_for
            return tolerance_for(x.dtype)
        """,
    )
    with CodeTracer(attributor, reference) as tracer:
        module.via_reference(ref_module.ref, torch.zeros(2))
        module.via_evaluator(torch.zeros(2))
        ref_module.ref(torch.zeros(2))  # called by the harness, not from candidate code: not reported
    kinds = {e.kind for e in tracer.events}
    assert kinds == {"pytorch_fallback", "sandbox_escape"}, tracer.events
    assert not any("called from outside" in e.evidence for e in tracer.events)
    assert sys.getprofile() is None


def test_kernel_analysis_separates_foreign_kernels_and_streams() -> None:
    def event(name: str, stream: int) -> SimpleNamespace:
        return SimpleNamespace(name=name, device_type="DeviceType.CUDA", device_resource_id=stream)

    events = [
        event("void at::native::bitwise_not_kernel_cuda(...)", 7),  # the harness's marker
        event("_scale_add_kernel", 7),
        event("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", 7),
        event("triton_poi_fused_add_mul_0", 7),
        event("_scale_add_kernel", 13),
        SimpleNamespace(name="aten::add", device_type="DeviceType.CPU", device_resource_id=1),
    ]
    report = analyse(events, {"_scale_add_kernel"})
    assert report.foreign == ["triton_poi_fused_add_mul_0"]
    assert len(report.other_streams) == 1 and "stream 13" in report.other_streams[0]


def test_kernel_analysis_times_the_launches_after_the_marker() -> None:
    from torch.autograd.profiler_util import Interval

    def event(name: str, start: float, end: float) -> SimpleNamespace:
        return SimpleNamespace(
            name=name, device_type="DeviceType.CUDA", device_resource_id=7, time_range=Interval(start, end)
        )

    events = [
        event(
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<signed char>>", 0, 1
        ),
        event("void at::native::bitwise_not_kernel_cuda(...)", 2.0, 3.0),  # the marker, after its zero fill
        event("_scale_add_kernel", 10.0, 14.5),
        event("_reduce_kernel", 15.0, 16.25),
        SimpleNamespace(name="no interval", device_type="DeviceType.CUDA", device_resource_id=7),
    ]
    report = analyse(events, {"_scale_add_kernel", "_reduce_kernel"})
    assert report.timed == [
        KernelTime("_scale_add_kernel", 4.5),
        KernelTime("_reduce_kernel", 1.25),
        KernelTime("no interval", 0.0),
    ]


def test_jit_kernel_names_sees_through_wrappers(tmp_path: Path) -> None:
    module, _ = _load(
        tmp_path,
        """
        import triton, triton.language as tl
        @triton.heuristics({"EVEN": lambda args: True})
        @triton.jit
        def _wrapped(x_ptr, EVEN: tl.constexpr):
            pass
        @triton.jit
        def _plain(x_ptr):
            pass
        def host():
            pass
        """,
    )
    assert jit_kernel_names(module) == {"_wrapped", "_plain"}


def test_harness_snapshot_sees_replaced_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = HarnessSnapshot()
    assert snapshot.changes() == []
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    changes = snapshot.changes()
    assert any(c.startswith("time.perf_counter was replaced") for c in changes)
    assert any(c.startswith("torch.allclose was replaced") for c in changes)


def test_precision_flags_changes_are_reported() -> None:
    before = precision_flags()
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")
        changes = flag_changes(before, precision_flags())
    finally:
        torch.set_float32_matmul_precision(previous)
    assert any("float32_matmul_precision" in c and "medium" in c for c in changes)
    # Restoring through the old API may leave the newer fp32_precision switches spelled differently.
    key = "torch.get_float32_matmul_precision()"
    assert precision_flags()[key] == before[key]


def test_module_fingerprint_sees_state_carried_between_calls() -> None:
    module = ModuleType("kb_fingerprint_test")
    module.cache = {}
    module.counter = 0
    module.fn = lambda x, memo={}: memo.setdefault(x, x)  # a mutable default: the pattern under test
    fingerprint = ModuleFingerprint(module)
    assert fingerprint.changes() == []
    module.cache["k"] = 1
    module.counter += 1
    module.fn(3)
    assert fingerprint.changes() == ["cache", "counter", "fn.__defaults__"]
    assert fingerprint.changes() == []
