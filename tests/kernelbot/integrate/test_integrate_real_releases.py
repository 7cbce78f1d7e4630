"""Real code: the codemod applied to SGLang 0.5.23 and LMDeploy 0.18.0 source trees (releases from the source
cache, as the extractor tests fetch them), integrated into one git repository made from the release as
`kernelbot target --repo pypi:...` makes it: laid out as the upstream repository (SGLang's package under
python/) and tagged with the release's tag. The first function of each as if its kernel had beaten the
engine's current path, the second unmeasured (and for SGLang a function that is not an op, under
@torch.compile, its kernel measured compiled). Each gives a patch that `git apply`s on the untouched tree and
uses the engine's own slot (SGLang: a forward_triton backend of the op, the kernel in
sglang/kernels/ops/<group>/, declared in capabilities only for the first; LMDeploy: a Triton<Op>Impl in
backends/cuda, the kernel in kernels/cuda, mapped in op_backend.py only for the first), with no line of the
reference changed; files that parse, a formatter with nothing left to change (beyond what it would change
upstream), guards without the cases' sizes, and generated tests over two dtypes and several model families'
sizes that pass on the CPU through Triton's interpreter (the cases small enough for it), with the release's
missing third-party packages faked around them (release_imports.py, as tests/extractors/original_loader.py
does for the extractor tests).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from extractors.extract import ExtractOptions, extract
from kernelbot.engines import load_profile
from kernelbot.engines.convention import SlotEvidence
from kernelbot.integrate import integrate, op_slug
from kernelbot.target.repo import prepare, release_tag
from tests.kernelbot.integrate.conftest import git
from tests.kernelbot.integrate.integrate_testing import assert_formatter_is_satisfied, release_root
from tests.kernelbot.integrate.pr_checks import assert_reviewable

HERE = Path(__file__).parent
BEATS, UNMEASURED = SlotEvidence(beats_current_path=True), SlotEvidence()
# (function, spec, candidate fixture, evidence): an op whose kernel beat the current path, one unmeasured,
# and a function that is not an op, under @torch.compile, its kernel measured compiled.
SGLANG_TARGETS = [
    (
        "sglang.srt.layers.activation:GeluAndMul.forward_native",
        HERE / "specs" / "sglang_gelu_and_mul.toml",
        "sglang_gelu_and_mul_forward_native",
        BEATS,
    ),
    (
        "sglang.srt.layers.layernorm:RMSNorm.forward_native",
        HERE / "specs" / "sglang_rmsnorm.toml",
        "sglang_rms_norm_forward_native",
        UNMEASURED,
    ),
    (
        "sglang.srt.sampling.penaltylib.repetition_penalty:apply_scaling_penalties",
        HERE / "specs" / "sglang_scaling_penalties.toml",
        "sglang_apply_scaling_penalties",
        SlotEvidence(measured_compiled=True),
    ),
]
# release -> (profile, [(function, spec, fixture, evidence)], packages whose __init__ the harness leaves
# unexecuted)
RELEASES = {
    "sglang==0.5.23": ("sglang", SGLANG_TARGETS, ("sglang",)),
    "lmdeploy==0.18.0": (
        "lmdeploy",
        [
            (
                "lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward",
                HERE / "specs" / "lmdeploy_rmsnorm.toml",
                "lmdeploy_rms_norm_forward",
                BEATS,
            ),
            (
                "lmdeploy.pytorch.backends.default.apply_rotary_emb:DefaultApplyRotaryEmbImpl.forward",
                HERE / "specs" / "lmdeploy_apply_rotary.toml",
                "lmdeploy_apply_rotary_forward",
                UNMEASURED,
            ),
        ],
        (),
    ),
}

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.mark.parametrize("release", list(RELEASES))
def test_codemod_on_a_real_release(release: str, tmp_path: Path, tool_venvs: dict[str, Path]) -> None:
    profile_name, targets, skip_init = RELEASES[release]
    release_root(release)  # skips when the release cannot be obtained
    repo = prepare(f"pypi:{release}", profile_name, "", tmp_path / "run").path
    assert git(repo, "tag", "--points-at", "HEAD").split() == [release_tag(f"pypi:{release}")]
    profile = load_profile(profile_name)
    root = Path(profile.for_tree(repo).source_root)
    integrations = []
    tasks = []
    for i, (function, spec, fixture, evidence) in enumerate(targets):
        task = tmp_path / f"task{i}"
        extract(ExtractOptions(repo, function, out=task, spec=spec))
        candidate = (HERE / "fixtures" / f"{fixture}.py").read_text()
        integrations.append(
            integrate(repo, profile, task, candidate, op_slug=op_slug(task), evidence=evidence)
        )
        tasks.append(task)
    # Guards without the cases' sizes; tests over two dtypes and the shapes of several model families.
    for integration, task, (function, *_) in zip(integrations, tasks, targets, strict=True):
        if "." in function.split(":")[1]:  # an op; a sampling helper's sizes come from no model family
            assert_reviewable(repo, integration, task, profile.formatter.line_length)
    # Paths as the repository has them: SGLang's package under python/, its tests under test/srt.
    for integration in integrations:
        assert integration.kernel_module.is_relative_to(root / profile.package), integration.kernel_module
        assert integration.test_file.is_relative_to(Path(profile.tests.directory)), integration.test_file
    touched = tuple(dict.fromkeys(p for i in integrations for p in i.touched))
    tracked = set(git(repo, "ls-files").split())
    upstream = {p: git(repo, "show", f"HEAD:{p}") for p in touched if str(p) in tracked}

    # The patch applies on the untouched tree and gives the same files; every touched file parses.
    git(repo, "add", "-A")
    patch = tmp_path / "change.diff"
    patch.write_text(git(repo, "diff", "--cached"))
    clean = tmp_path / "clean"
    git(tmp_path, "clone", "-q", str(repo), str(clean))
    git(clean, "apply", "--check", str(patch))
    git(clean, "apply", str(patch))
    for path in touched:
        assert (clean / path).read_text() == (repo / path).read_text()
        ast.parse((repo / path).read_text(), filename=str(path))
    for integration, (function, _, _, evidence) in zip(integrations, targets, strict=True):
        _assert_the_engines_slot(repo, root, profile.name, integration, function, upstream)
        if function.endswith("RMSNorm.forward_native"):
            _assert_the_kernel_takes_what_it_reads(repo, root, integration)
        if ":" in function and "." in function.split(":")[1]:  # an op: selected only on the evidence
            assert integration.auto_selected == bool(evidence.beats_current_path)
    for path in (p for p in touched if p in upstream):  # upstream lines stay, but for a remapped spec
        removed = [
            ln for ln in git(repo, "diff", "--cached", "--", str(path)).splitlines() if ln.startswith("-")
        ]
        if path.name == "op_backend.py":
            assert len(removed) == 3, removed  # the header and the two lines of the block that is remapped
        else:
            assert removed == [f"--- a/{path}"], removed

    assert_formatter_is_satisfied(repo, touched, profile.formatter, upstream)

    # The generated tests pass on the CPU (the interpreter runs the kernels).
    jit = repo / root / "sglang" / "kernels" / "jit"
    if jit.is_dir():  # the unpacked release has only .py files; its JIT loader looks for these two folders
        (jit / "include").mkdir(exist_ok=True)
        (jit / "csrc").mkdir(exist_ok=True)
    site_packages = sorted(tool_venvs["msgspec==0.23.0"].glob("lib/python*/site-packages"))
    cmd = [sys.executable, str(HERE / "run_generated_test.py"), str(repo / root), profile.package]
    cmd += [str(repo / i.test_file) for i in integrations]
    cmd += [arg for name in skip_init for arg in ("--skip-init", name)]
    cmd += [arg for path in site_packages for arg in ("--site-packages", str(path))]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=600, check=False)
    summary = done.stdout.strip().splitlines()[-1:] or [done.stderr[-2000:]]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in summary[0] and "failed" not in summary[0], summary
    # Only the cases too large for the interpreter are skipped on a machine without a GPU.
    skips = [ln for ln in done.stdout.splitlines() if ln.startswith("SKIPPED [")]
    assert all("runs on a CUDA GPU" in ln for ln in skips), skips


def _assert_the_engines_slot(
    repo: Path, root: Path, engine: str, integration, function: str, upstream: dict[Path, str]
) -> None:
    module, qualname = function.split(":")
    reference = root.joinpath(*module.split(".")).with_suffix(".py")
    assert integration.reference_file == reference
    text = (repo / reference).read_text()
    if "." not in qualname:  # not an op: a guarded call where it is defined, said to be compiled
        assert integration.in_compile_region and "inside a torch.compile region" in integration.slot
        assert integration.kernel_module.parent == root / "sglang/kernels/ops/sampling"
        assert f"    if can_use_{qualname}_triton(" in text
        return
    owner, method = qualname.split(".")
    if engine == "sglang":
        group = {"activation": "activation", "layernorm": "layernorm"}[reference.stem]
        assert integration.kernel_module.parent == root / "sglang/kernels/ops" / group
        assert _method(text, owner, method) == _method(upstream[reference], owner, method)
        assert _method(text, owner, "forward_triton")
        declared = "KernelBackend.TRITON: {CapabilityRequirement.CUDA}" in _class(text, owner)
        assert declared == integration.auto_selected
        assert bool(_method(text, owner, "backend_eligible")) == integration.auto_selected
    else:
        assert reference not in integration.touched  # backends/default/ is never edited
        assert integration.kernel_module.parent == root / "lmdeploy/pytorch/kernels/cuda"
        impl_file = root / "lmdeploy/pytorch/backends/cuda" / reference.name
        impl = f"Triton{owner.removeprefix('Default').removesuffix('Impl')}V2Impl"
        assert f"class {impl}({owner}):" in (repo / impl_file).read_text()
        assert "return super().forward(" in _method((repo / impl_file).read_text(), impl, "forward")
        op_backend = (repo / root / "lmdeploy/pytorch/backends/cuda/op_backend.py").read_text()
        assert (f"return cast(ImplT, {impl}(" in op_backend) == integration.auto_selected


def _assert_the_kernel_takes_what_it_reads(repo: Path, root: Path, integration) -> None:
    """SGLang RMSNorm's fixture reads no quant_linear, override_orig_dtype, fp32_residual,
    variance_size_override or cast_x_before_out_mul (the guard refuses those options): the module's entry
    leaves them out of its signature, forward_triton passes them to the guard only, and the generated test
    (run below through the interpreter) calls the entry with the rest."""
    unread = {"quant_linear", "override_orig_dtype", "fp32_residual", "variance_size_override"}
    unread.add("cast_x_before_out_mul")
    kernel = ast.parse((repo / integration.kernel_module).read_text())
    entry = next(
        f for f in kernel.body if isinstance(f, ast.FunctionDef) and f.name == integration.kernel_entry
    )
    guard = next(f for f in kernel.body if isinstance(f, ast.FunctionDef) and f.name == integration.guard)
    params = {a.arg for a in (*entry.args.args, *entry.args.kwonlyargs)}
    assert not params & unread and unread <= {a.arg for a in (*guard.args.args, *guard.args.kwonlyargs)}
    calls = {
        node.func.id: node
        for node in ast.walk(ast.parse((repo / integration.reference_file).read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    call = calls[integration.kernel_entry]
    passed = {*(a.id for a in call.args if isinstance(a, ast.Name)), *(k.arg for k in call.keywords)}
    assert passed == params, passed
    assert {k.arg for k in calls[integration.guard].keywords} >= unread - {"quant_linear"}


def _class(source: str, name: str) -> str:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.get_source_segment(source, node) or ""
    return ""


def _method(source: str, owner: str, name: str) -> str:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return ast.get_source_segment(source, item) or ""
    return ""
