"""The example profile on examples/minirepo (copied into a git repository): SiluAndMul.forward_native and
RMSNorm.forward_native integrated with hand-written correct candidates as the ops' forward_triton backends
(SiluAndMul's declared in capabilities, as if it had beaten the current path; RMSNorm's opt-in), and a
method that is not an op with a guarded call; minirepo's whole test suite and the generated tests pass, the
patch applies, the formatter is satisfied, no line of forward_native changes; a wrong kernel fails its
generated test; bad input gets one clear error and leaves the tree as it was."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from extractors.extract import ExtractOptions, extract
from kernelbot.engines import load_profile
from kernelbot.engines.convention import SlotEvidence
from kernelbot.formatting import FormatterError
from kernelbot.integrate import Integration, IntegrationError, integrate, op_slug
from tests.kernelbot.integrate.conftest import git, make_git_repo
from tests.kernelbot.integrate.integrate_testing import assert_formatter_is_satisfied
from tests.kernelbot.integrate.pr_checks import assert_reviewable

ROOT = Path(__file__).resolve().parents[3]
MINIREPO = ROOT / "examples" / "minirepo"
HERE = Path(__file__).parent
SPECS = HERE / "specs"
TARGETS = {
    "silu": (
        "minisglang.layers.activation:SiluAndMul.forward_native",
        SPECS / "minisglang_silu_and_mul.toml",
        "silu_and_mul_forward_native",
    ),
    "rmsnorm": (
        "minisglang.layers.layernorm:RMSNorm.forward_native",
        SPECS / "minisglang_rmsnorm.toml",
        "minisglang_rms_norm_forward_native",
    ),
    # In place and setting an attribute: the buffers are rewritten, self.max_seq_len_k is assigned back.
    "decode_metadata": (
        "minisglang.attention.flash_backend:FlashDecodeBackend.init_forward_metadata_replay",
        ROOT / "tests" / "extractors" / "specs" / "minisglang_decode_metadata.toml",
        "minisglang_decode_metadata",
    ),
}

pytestmark = pytest.mark.slow


@dataclass
class Integrated:
    repo: Path
    base: dict[Path, str]  # touched files as they were upstream
    integrations: list[Integration]
    tasks: list[Path]


def _task(repo: Path, tmp: Path, key: str) -> Path:
    function, spec, _ = TARGETS[key]
    extract(ExtractOptions(repo, function, out=tmp / f"task-{key}", spec=spec))
    return tmp / f"task-{key}"


def _candidate(key: str) -> str:
    return (HERE / "fixtures" / f"{TARGETS[key][2]}.py").read_text()


def _pytest(repo: Path, *args: str, interpret: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-o", "addopts=", "-p", "no:cacheprovider", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def integrated(tmp_path_factory: pytest.TempPathFactory, tool_venvs: dict) -> Integrated:
    tmp = tmp_path_factory.mktemp("minirepo")
    repo = make_git_repo(MINIREPO, tmp / "repo")
    profile = load_profile("example")
    base = {}
    integrations = []
    tasks = []
    for key in TARGETS:
        task = _task(repo, tmp, key)
        tasks.append(task)
        before = {p: (repo / p).read_text() for p in git(repo, "ls-files").split()}
        evidence = SlotEvidence(beats_current_path=True if key == "silu" else None)
        integration = integrate(
            repo, profile, task, _candidate(key), op_slug=op_slug(task), evidence=evidence
        )
        base.update({p: before[str(p)] for p in integration.touched if str(p) in before})
        integrations.append(integration)
    return Integrated(repo, base, integrations, tasks)


def test_the_ops_get_forward_triton_backends_and_the_method_a_guarded_call(integrated: Integrated) -> None:
    silu, rmsnorm, metadata = integrated.integrations
    repo = integrated.repo
    assert silu.kernel_module == Path("minisglang/kernels/ops/activation/silu_and_mul_triton.py")
    assert rmsnorm.kernel_module == Path("minisglang/kernels/ops/layernorm/rms_norm_triton.py")
    assert metadata.kernel_module.parent == Path("minisglang/kernels/ops/attention")
    assert rmsnorm.test_file == Path("tests/test_rms_norm_triton.py")
    assert rmsnorm.test_command == [
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        str(rmsnorm.test_file),
    ]
    assert "eps: any float" in rmsnorm.envelope.describe()
    # forward_native, the reference, keeps every line; the kernel is the op's forward_triton backend.
    for integration, path in ((silu, "activation.py"), (rmsnorm, "layernorm.py")):
        before, after = integrated.base[Path("minisglang/layers") / path], (repo / "minisglang/layers" / path)
        native = _method_source(before, "forward_native")
        assert native and native == _method_source(after.read_text(), "forward_native")
        assert "def forward_triton(" in after.read_text() and integration.reference_file == Path(
            "minisglang/layers", path
        )
    layernorm = (repo / "minisglang/layers/layernorm.py").read_text()
    assert (
        "from minisglang.kernels.ops.layernorm.rms_norm_triton import "
        "can_use_rms_norm_triton, rms_norm_triton" in layernorm
    )
    assert (
        "        if not can_use_rms_norm_triton(x, residual, eps=self.eps, weight=self.weight):\n"
        in layernorm
    )
    assert "        return rms_norm_triton(x, residual, eps=self.eps, weight=self.weight)\n" in layernorm
    # Declared in capabilities only on evidence that it beat the current path; opt-in otherwise, said why.
    activation = (repo / "minisglang/layers/activation.py").read_text()
    assert "capabilities = {KernelBackend.TRITON: {CapabilityRequirement.CUDA}}" in activation
    assert "def backend_eligible(self, backend, x: torch.Tensor) -> bool:" in activation
    assert silu.auto_selected and "beat the path the op dispatches to today" in silu.selection
    assert "capabilities" not in layernorm and "backend_eligible" not in layernorm
    assert not rmsnorm.auto_selected and "was not measured" in rmsnorm.selection
    assert "forward_triton" in silu.slot and not silu.in_compile_region
    kernel = (repo / silu.kernel_module).read_text()
    assert "EVOLVE-BLOCK" not in kernel and "def silu_and_mul_triton(" in kernel
    assert "silu_and_mul_forward_native" not in kernel
    assert "Generated by kernelbot from minisglang/layers/activation.py:SiluAndMul.forward_native" in kernel
    assert not silu.notes and not rmsnorm.notes and not metadata.notes
    backend = (repo / "minisglang/attention/flash_backend.py").read_text()
    # Not an op: a guarded call in the method. The attribute it sets comes back from the kernel; its old
    # value is not passed in.
    assert (
        "            self.max_seq_len_k = flash_decode_backend_init_forward_metadata_replay_triton(\n"
        in backend
    )
    assert "max_seq_len_k=self.max_seq_len_k" not in backend
    assert "guarded call" in metadata.slot and metadata.auto_selected
    assert [rule.name for rule in metadata.envelope.values] == ["bs", "seq_len_delta", "page_size"]
    # The engine passes seq_lens_cpu on the host (its spec: `seq_lens.cpu()`): the guard asks for a CPU
    # tensor there, and the generated test and benchmark leave it on the CPU.
    assert [rule.name for rule in metadata.envelope.tensors if rule.host] == ["seq_lens_cpu"]
    guard = (repo / metadata.kernel_module).read_text()
    assert '_is_checked_tensor(seq_lens_cpu, (torch.int32,), (1,), device="cpu")' in guard
    assert "_is_checked_tensor(seq_lens, (torch.int32,), (1,))\n" in guard
    test = (repo / metadata.test_file).read_text()
    assert "args = tuple(a if i == 3 else _on_device(a) for i, a in enumerate(args))" in test
    bench = (repo / metadata.bench_file).read_text()
    assert "isinstance(a, torch.Tensor) and i != 3 else a" in bench


def test_the_engine_dispatches_as_its_contract_says(integrated: Integrated) -> None:
    """On the CPU: the declared backend is for CUDA, so the op runs forward_native; asked for explicitly,
    forward_triton refuses operands outside its guard (a CPU tensor), as an unimplemented backend does."""
    script = (
        "import torch\n"
        "from minisglang.kernels.spec import KernelBackend\n"
        "from minisglang.layers.activation import SiluAndMul\n"
        "x = torch.randn(4, 64)\n"
        "op = SiluAndMul()\n"
        "assert torch.equal(op(x), op.forward_native(x))\n"
        "try:\n"
        "    op(x, backend=KernelBackend.TRITON)\n"
        "except NotImplementedError as exc:\n"
        "    print('refused:', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=integrated.repo, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: SiluAndMul: operands the Triton kernel was not checked on" in done.stdout


def _method_source(source: str, name: str) -> str:
    tree = ast.parse(source)
    found = [ast.get_source_segment(source, n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    return "\n".join(s for s in found if s and s.lstrip().startswith(f"def {name}("))


def test_the_whole_suite_and_the_generated_tests_pass(integrated: Integrated) -> None:
    done = _pytest(integrated.repo, interpret=True)
    assert done.returncode == 0, done.stdout[-4000:]
    for integration in integrated.integrations:
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith(f"{integration.test_file}::")]
        everywhere = [ln for ln in lines if "_at_served_sizes[" not in ln]
        passed = all(ln.split()[1] == "PASSED" for ln in everywhere)
        assert len(everywhere) >= 5 and passed, done.stdout[-3000:]
        # Cases too large for the interpreter are skipped without a GPU, and only those.
        gpu_only = [ln for ln in lines if "_at_served_sizes[" in ln]
        assert all(ln.split()[1] == "SKIPPED" for ln in gpu_only), done.stdout[-3000:]
    assert " failed" not in done.stdout


def test_the_generated_test_covers_dtypes_and_model_families(integrated: Integrated) -> None:
    """The rmsnorm test runs over both half dtypes and over hidden sizes of several model families, its
    residual switch reaches make_inputs, and its module loads no matter what was imported before it."""
    rmsnorm = integrated.integrations[1]
    text = (integrated.repo / rmsnorm.test_file).read_text()
    assert "DTYPES = [torch.bfloat16, torch.float16]" in text and "noqa: E402" not in text
    assert_reviewable(integrated.repo, rmsnorm, integrated.tasks[1], 110)  # minirepo's ruff line length
    kernel_module = ".".join(rmsnorm.kernel_module.with_suffix("").parts)
    script = (
        "import sys, triton, pytest\n"
        f"import {kernel_module}  # imported before the test could set TRITON_INTERPRET\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-rs', '{rmsnorm.test_file}']))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    argv = [sys.executable, "-c", script]
    done = subprocess.run(argv, cwd=integrated.repo, env=env, capture_output=True, text=True, timeout=600)
    progress = done.stdout.splitlines()[0] if done.stdout else ""
    assert done.returncode == 0 and progress.count(".") >= 8 and "F" not in progress, done.stdout[-3000:]
    skips = [ln for ln in done.stdout.splitlines() if ln.startswith("SKIPPED [")]
    assert all("runs on a CUDA GPU" in ln for ln in skips), done.stdout[-3000:]


def test_the_patch_applies_parses_and_satisfies_the_formatter(integrated: Integrated, tmp_path: Path) -> None:
    repo = integrated.repo
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached")
    clean = tmp_path / "clean"
    git(tmp_path, "clone", "-q", str(repo), str(clean))
    (tmp_path / "change.diff").write_text(patch)
    git(clean, "apply", "--check", str(tmp_path / "change.diff"))
    git(clean, "apply", str(tmp_path / "change.diff"))
    touched = tuple(dict.fromkeys(p for i in integrated.integrations for p in i.touched))
    for path in touched:
        assert (clean / path).read_text() == (repo / path).read_text()
        ast.parse((repo / path).read_text())
    assert_formatter_is_satisfied(repo, touched, load_profile("example").formatter, integrated.base)


# Runs a benchmark script on the CPU: tensors stay put, torch.compile is the identity, the guard (which wants
# a CUDA device) says yes, and do_bench calls the timed function once and records how many times the kernel's
# entry ran in it.
BENCH_DRIVER = """
import json, runpy, sys, torch, triton.testing
torch.Tensor.cuda = lambda self, *a, **k: self
torch.compile = lambda function, **kwargs: function
script, entry, guard = sys.argv[1:4]
sys.argv[1:] = []
module = runpy.run_path(script, run_name="bench")
kernel = module["kernel"]
original, refuse, calls, per_timing = getattr(kernel, entry), getattr(kernel, guard), [0], []
def counted(*args, **kwargs):
    calls[0] += 1
    return original(*args, **kwargs)
for loaded in list(sys.modules.values()):  # the kernel module and the modules that imported its names
    for name, value in list(vars(loaded).items()) if loaded.__name__ != "__main__" else ():
        if value is original:
            setattr(loaded, name, counted)
        elif value is refuse:
            setattr(loaded, name, lambda *args, **kwargs: kernel.ENABLED)
def do_bench(function, return_mode="median"):
    before = calls[0]
    function()
    per_timing.append(calls[0] - before)
    return 0.01
triton.testing.do_bench = do_bench
del module["CASES"][1:], module["DTYPES"][1:]
module["main"]()
print(json.dumps(per_timing))
"""


def test_the_benchmark_script_times_the_original_and_the_kernel_slot(integrated: Integrated) -> None:
    """Each benchmark script runs (on the CPU here, through the interpreter): its table has the eager,
    torch.compile, current-path and Triton columns, and only the Triton timing reaches the kernel: through
    forward_triton for the ops (forward_native stays the original) and the guarded call for the method."""
    for integration in integrated.integrations:
        assert integration.bench_file is not None
        script = integrated.repo / integration.bench_file
        argv = [sys.executable, "-c", BENCH_DRIVER, str(script), integration.kernel_entry, integration.guard]
        env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(integrated.repo)}
        done = subprocess.run(argv, cwd=integrated.repo, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = done.stdout.splitlines()
        assert lines[0].split(" | ")[1:8] == [
            "dtype", "eager (us)", "torch.compile (us)", "current path (us)", "Triton (us)", "vs eager",
            "vs compile",
        ]  # fmt: skip
        # eager, compile (the original code; here the current path is the original too), then the kernel
        assert json.loads(lines[-1]) == [0, 0, 1], done.stdout
        assert any(line.startswith("current path = eager: ") for line in lines), done.stdout


def test_a_wrong_kernel_fails_its_generated_test_run_alone(tmp_path: Path, tool_venvs: dict) -> None:
    """Run on its own, without TRITON_INTERPRET in the environment, the generated test turns the interpreter
    on itself: the kernel runs on the CPU (no skip) and its wrong result fails every case."""
    repo = make_git_repo(MINIREPO, tmp_path / "repo")
    task = _task(repo, tmp_path, "silu")
    wrong = _candidate("silu").replace("gate * tl.sigmoid(gate) * up", "gate * up")
    integration = integrate(repo, load_profile("example"), task, wrong, op_slug=op_slug(task))
    done = _pytest(repo, str(integration.test_file), interpret=False)
    assert done.returncode == 1 and " passed" not in done.stdout, done.stdout
    assert "Mismatched elements" in done.stdout


def test_bad_input_is_refused_with_the_tree_untouched(tmp_path: Path, tool_venvs: dict) -> None:
    repo = make_git_repo(MINIREPO, tmp_path / "repo")
    task = _task(repo, tmp_path, "silu")
    profile = load_profile("example")
    cases = [
        (
            _candidate("silu").replace("def silu_and_mul_forward_native(", "def other("),
            "defines no module-level function silu_and_mul_forward_native",
        ),
        (_candidate("silu").replace("(x: torch.Tensor)", "(x: torch.Tensor, y=None)"), "must match"),
        ("def silu_and_mul_forward_native(x:\n", "not valid Python"),
    ]
    cases.append((_candidate("silu"), "op slug 'X' must be lowercase"))
    for candidate, message in cases:
        with pytest.raises(IntegrationError, match=message):
            integrate(repo, profile, task, candidate, op_slug="X" if "slug" in message else "x")
        assert git(repo, "status", "--porcelain") == ""
    activation = repo / "minisglang/layers/activation.py"
    activation.write_text(
        activation.read_text().replace("def forward_native(", "@torch.jit.script\n    def forward_native(")
    )
    with pytest.raises(IntegrationError, match=r"cannot rewrite SiluAndMul\.forward_native: .*TorchScript"):
        integrate(repo, profile, task, _candidate("silu"), op_slug="x")
    activation.write_text(activation.read_text().replace("class SiluAndMul", "class Renamed"))
    with pytest.raises(
        IntegrationError,
        match=r"SiluAndMul\.forward_native is not defined in minisglang/layers/activation\.py",
    ):
        integrate(repo, profile, task, _candidate("silu"), op_slug="x")
    git(repo, "checkout", "--", ".")
    integrate(repo, profile, task, _candidate("silu"), op_slug="x")
    with pytest.raises(IntegrationError, match="already exists"):
        integrate(repo, profile, task, _candidate("silu"), op_slug="x")


def test_a_formatter_that_cannot_be_installed_leaves_the_tree_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_git_repo(MINIREPO, tmp_path / "repo")
    task = _task(repo, tmp_path, "silu")
    monkeypatch.setenv("KERNELBOT_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no index, no find-links: nothing to install from
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(FormatterError, match=r"formatter ruff==0\.15\.4 is not installed and could not be"):
        integrate(repo, load_profile("example"), task, _candidate("silu"), op_slug="silu")
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_function_under_torch_compile_takes_the_call_only_when_measured_compiled(
    tmp_path: Path, tool_venvs: dict
) -> None:
    repo = make_git_repo(MINIREPO, tmp_path / "repo")
    task = _task(repo, tmp_path, "decode_metadata")
    backend = repo / "minisglang/attention/flash_backend.py"
    method = "    def init_forward_metadata_replay("
    backend.write_text(backend.read_text().replace(method, f"    @torch.compile(dynamic=True)\n{method}"))
    git(repo, "commit", "-qam", "the method runs compiled")
    profile = load_profile("example")
    with pytest.raises(IntegrationError, match=r"runs under torch\.compile .* not measured compiled"):
        integrate(repo, profile, task, _candidate("decode_metadata"), op_slug="x")
    assert git(repo, "status", "--porcelain") == ""
    measured = SlotEvidence(measured_compiled=True)
    integration = integrate(
        repo, profile, task, _candidate("decode_metadata"), op_slug="x", evidence=measured
    )
    assert integration.in_compile_region and "inside a torch.compile region" in integration.slot
