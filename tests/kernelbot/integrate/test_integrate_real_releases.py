"""Real code: the codemod applied to SGLang 0.5.23 and 0.5.9 and LMDeploy 0.18.0 source trees (releases from
the source cache, as the extractor tests fetch them), two functions each, integrated into one git repository
made from the release as `kernelbot target --repo pypi:...` makes it: laid out as the upstream repository
(SGLang's package under python/) and tagged with the release's tag. Each gives a patch that `git apply`s on
the untouched tree, files that parse, a formatter with nothing left to change (beyond what it would change
upstream), guards without the cases' sizes, tests over two dtypes and several model families' sizes that
pass on the CPU through Triton's interpreter (the cases small enough for it), with the release's missing
third-party packages faked around them (release_imports.py, as tests/extractors/original_loader.py does for
the extractor tests).

The candidates are hand-written fixtures (fixtures/): this is about the codemod, not about kernel quality.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from extractors.extract import ExtractOptions, extract
from kernelbot.integrate import integrate, op_slug
from kernelbot.profiles import load_profile
from kernelbot.target.repo import prepare, release_tag
from tests.kernelbot.integrate.conftest import git
from tests.kernelbot.integrate.integrate_testing import assert_formatter_is_satisfied, release_root
from tests.kernelbot.integrate.pr_checks import assert_reviewable

HERE = Path(__file__).parent
SPECS = HERE.parents[1] / "extractors" / "specs" / "real"
SGLANG_TARGETS = [
    (
        "sglang.srt.layers.activation:SiluAndMul.forward_native",
        "sglang_silu_and_mul",
        "silu_and_mul_forward_native",
    ),
    (
        "sglang.srt.layers.layernorm:RMSNorm.forward_native",
        "sglang_rmsnorm",
        "sglang_rms_norm_forward_native",
    ),
]
# release -> (profile, [(function, spec, fixture)], packages whose __init__ the harness leaves unexecuted)
RELEASES = {
    "sglang==0.5.23": ("sglang", SGLANG_TARGETS, ("sglang",)),
    "sglang==0.5.9": ("sglang", SGLANG_TARGETS, ("sglang",)),
    "lmdeploy==0.18.0": (
        "lmdeploy",
        [
            (
                "lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward",
                "lmdeploy_rmsnorm",
                "lmdeploy_rms_norm_forward",
            ),
            (
                "lmdeploy.pytorch.backends.default.apply_rotary_emb:DefaultApplyRotaryEmbImpl.forward",
                "lmdeploy_apply_rotary",
                "lmdeploy_apply_rotary_forward",
            ),
        ],
        (),
    ),
}

# SGLang 0.5.9's RMSNorm.forward_native has no quant_linear parameter yet: its candidate has none either.
CANDIDATE_EDITS = {
    ("sglang==0.5.9", "sglang_rms_norm_forward_native"): [
        ("    quant_linear=None,\n", ""),
        ("quant_linear is not None or ", ""),
    ],
}

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.mark.parametrize("release", list(RELEASES))
def test_codemod_on_a_real_release(release: str, tmp_path: Path, tool_venvs: dict[str, Path]) -> None:
    profile_name, targets, skip_init = RELEASES[release]
    release_root(release)  # skips when the release cannot be obtained
    prepared = prepare(f"pypi:{release}", profile_name, "", tmp_path / "run")
    repo = prepared.path
    assert git(repo, "tag", "--points-at", "HEAD").split() == [release_tag(f"pypi:{release}")]
    profile = load_profile(profile_name)
    source_root = repo / profile.for_tree(repo).source_root
    integrations = []
    tasks = []
    for i, (function, spec, fixture) in enumerate(targets):
        task = tmp_path / f"task{i}"
        extract(ExtractOptions(repo, function, out=task, spec=SPECS / f"{spec}.toml"))
        candidate = (HERE / "fixtures" / f"{fixture}.py").read_text()
        for old, new in CANDIDATE_EDITS.get((release, fixture), []):
            assert old in candidate
            candidate = candidate.replace(old, new)
        integrations.append(integrate(repo, profile, task, candidate, op_slug=op_slug(task)))
        tasks.append(task)
    # Guards without the cases' sizes; tests over two dtypes and the shapes of several model families.
    for integration, task in zip(integrations, tasks, strict=True):
        assert_reviewable(repo, integration, task, profile.formatter.line_length)
    touched = tuple(dict.fromkeys(p for i in integrations for p in i.touched))
    # Paths as the repository has them: SGLang's package under python/, its tests under test/srt.
    package_dir = Path(profile.for_tree(repo).source_root, profile.package)
    for integration in integrations:
        assert integration.kernel_module.is_relative_to(package_dir), integration.kernel_module
        assert integration.test_file.is_relative_to(Path(profile.tests.directory)), integration.test_file
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
    edited = [p for p in touched if p in upstream]
    assert len(edited) == len(targets) + int(profile.kernel.export_from_init)
    for path in edited:  # a minimal diff: lines are only added to upstream files
        removed = [
            ln for ln in git(repo, "diff", "--cached", "--", str(path)).splitlines() if ln.startswith("-")
        ]
        assert removed == [f"--- a/{path}"], removed

    assert_formatter_is_satisfied(repo, touched, profile.formatter, upstream)
    if profile.kernel.lazy_import:  # LMDeploy: backends/default/ itself imports neither kernel nor Triton
        for integration in integrations:
            kernel = ".".join(integration.kernel_module.with_suffix("").parts)
            added = {integration.kernel_module, integration.test_file, integration.bench_file}
            for path in set(integration.touched) - added:
                if path.name == "__init__.py":
                    continue
                tree = ast.parse((repo / path).read_text())
                imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == kernel]
                assert len(imports) == 1 and imports[0] not in tree.body, path

    # The generated tests pass on the CPU (the interpreter runs the kernels).
    jit = source_root / "sglang" / "kernels" / "jit"
    if jit.is_dir():  # the unpacked release has only .py files; its JIT loader looks for these two folders
        (jit / "include").mkdir(exist_ok=True)
        (jit / "csrc").mkdir(exist_ok=True)
    site_packages = sorted(tool_venvs["msgspec==0.23.0"].glob("lib/python*/site-packages"))
    cmd = [sys.executable, str(HERE / "run_generated_test.py"), str(source_root), profile.package]
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
