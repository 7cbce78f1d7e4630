"""The real-kernel corpus: Triton kernels that LMDeploy and Liger-Kernel ship in their pip releases, each
judged as a candidate for a task made from the PyTorch code it replaces.

Nothing of theirs lives in this repository. A corpus entry names a pinned release, the module and the
top-level names to lift (kernel, launcher, helpers: bench.real_kernel_lift copies their text from the
release cache), and a wrapper of ours (tests/adversarial/real_kernels/wrappers/<id>.py.in) that adapts the
task's entry signature to the project's launcher the way the project's own caller does. The tasks are
extracted from LMDeploy's default (PyTorch) implementations by `kernelbot extract`, or written here after
them where the PyTorch code keeps its activation in an nn.Module attribute (tasks/<key>/).

Used by tests/adversarial/real_kernels (CPU, interpreter, small cases) and bench/real_kernels.py (H200,
triton-cuda, model-sized cases).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
import tomli_w

from bench.real_kernel_lift import Lifter

CORPUS_DIR = Path(__file__).resolve().parents[1] / "tests" / "adversarial" / "real_kernels"
WRAPPERS = CORPUS_DIR / "wrappers"
SPECS = CORPUS_DIR / "specs"
TASK_TEMPLATES = CORPUS_DIR / "tasks"
WRAPPER_MARK = "# --- the wrapper (kernelbot's): the task's entry, calling the release's launcher ---"
LMDEPLOY = "lmdeploy==0.18.0"
LIGER = "liger-kernel==0.8.5"
# The dtype of the tasks' tensors: bf16 as served; float32 under the interpreter, whose bf16 x bf16
# arithmetic works on the raw bits (Triton 3.9: a bf16 product of 1.0 and 2.0 comes out as garbage).
GPU_DTYPE = "bfloat16"
CI_DTYPE = "float32"

Sizes = Mapping[str, "int | str | list[int] | list[str]"]


@dataclass(frozen=True)
class TaskRecipe:
    """A task for the corpus: extracted from a release's PyTorch function, or a template of ours."""

    key: str
    ci_sizes: Sizes
    gpu_sizes: Sizes
    requirement: str = ""  # extracted: the release ...
    function: str = ""  # ... and its function (package.module:Qualname)
    spec: str = ""  # the input spec's [args] (specs/<spec>, {dtype} filled in); [sizes] from *_sizes
    template: str = ""  # written here: tasks/<template>/ (reference.py, inputs.py, task.toml header)


@dataclass(frozen=True)
class RealKernel:
    id: str
    project: str  # "LMDeploy" / "Liger-Kernel"
    requirement: str
    package: str  # the release's top-level package
    module: str  # where the launcher lives
    names: tuple[str, ...]  # the launcher (and anything the wrapper calls directly)
    task: str  # TaskRecipe.key
    bindings: Mapping[str, str] = field(default_factory=dict)  # conditional imports, chosen
    aliases: Mapping[str, str] = field(default_factory=dict)  # release name -> the name it is lifted as
    # Why Triton's interpreter cannot run the kernel (autotuning, a libdevice call, a scalar method) and the
    # error it raises: CPU CI then checks the static stage and that nothing is flagged; the GPU run judges
    # correctness.
    interpreter_gap: str = ""
    interpreter_error: str = ""

    @property
    def wrapper_path(self) -> Path:
        return WRAPPERS / f"{self.id}.py.in"


TASKS: dict[str, TaskRecipe] = {
    r.key: r
    for r in (
        TaskRecipe(
            "rmsnorm",
            ci_sizes={"tokens": [1, 33], "hidden": 256},
            gpu_sizes={"tokens": [1, 256, 4096], "hidden": 4096},
            requirement=LMDEPLOY,
            function="lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward",
            spec="rmsnorm.toml",
        ),
        TaskRecipe(
            "add_rmsnorm",
            ci_sizes={"tokens": [1, 33], "hidden": 256},
            gpu_sizes={"tokens": [1, 256, 4096], "hidden": 4096},
            requirement=LMDEPLOY,
            function="lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward",
            spec="add_rmsnorm.toml",
        ),
        TaskRecipe(
            "apply_rotary",
            ci_sizes={"tokens": [1, 17], "heads": 4, "kv_heads": 2, "head_dim": 64},
            gpu_sizes={"tokens": [1, 256, 4096], "heads": 32, "kv_heads": 8, "head_dim": 128},
            requirement=LMDEPLOY,
            function="lmdeploy.pytorch.backends.default.apply_rotary_emb:DefaultApplyRotaryEmbImpl.forward",
            spec="apply_rotary.toml",
        ),
        TaskRecipe(
            "silu_and_mul",
            ci_sizes={"tokens": [1, 33], "inter": [256, 100], "dtype": CI_DTYPE},
            gpu_sizes={"tokens": [1, 256, 4096], "inter": 14336, "dtype": GPU_DTYPE},
            template="silu_and_mul",
        ),
        TaskRecipe(
            "gelu_tanh_and_mul",
            ci_sizes={"tokens": [1, 33], "inter": [256, 100], "dtype": CI_DTYPE},
            gpu_sizes={"tokens": [1, 256, 4096], "inter": 14336, "dtype": GPU_DTYPE},
            template="gelu_tanh_and_mul",
        ),
    )
}

_LIGER_LIBDEVICE = "from triton.language.extra.libdevice import {}"
# LMDeploy's get_device_props reads torch.cuda: the wrappers answer under the interpreter, the release
# on a GPU.
_LMDEPLOY_PROPS = {"get_device_props": "lmdeploy_device_props"}
_SCALAR_GAP = (
    "the interpreter passes a float argument as a Python float: `eps.to(tl.float32)` in the kernel fails"
)
_SCALAR_ERROR = "'float' object has no attribute 'to'"

CORPUS: tuple[RealKernel, ...] = (
    RealKernel(
        "lmdeploy_rms_norm",
        "LMDeploy",
        LMDEPLOY,
        "lmdeploy",
        "lmdeploy.pytorch.kernels.cuda.rms_norm",
        ("rms_norm",),
        "rmsnorm",
        aliases=_LMDEPLOY_PROPS,
    ),
    RealKernel(
        "lmdeploy_add_rms_norm",
        "LMDeploy",
        LMDEPLOY,
        "lmdeploy",
        "lmdeploy.pytorch.kernels.cuda.rms_norm",
        ("rms_norm",),
        "add_rmsnorm",
        aliases=_LMDEPLOY_PROPS,
    ),
    RealKernel(
        "lmdeploy_silu_and_mul",
        "LMDeploy",
        LMDEPLOY,
        "lmdeploy",
        "lmdeploy.pytorch.kernels.cuda.activation",
        ("silu_and_mul",),
        "silu_and_mul",
        aliases={**_LMDEPLOY_PROPS, "silu_and_mul": "silu_and_mul_launch"},
        interpreter_gap="`fast_expf = tl.math.exp` binds the builtin before the interpreter patches tl.math",
        interpreter_error="_semantic",
    ),
    RealKernel(
        "lmdeploy_apply_rotary",
        "LMDeploy",
        LMDEPLOY,
        "lmdeploy",
        "lmdeploy.pytorch.kernels.cuda.apply_rotary_pos_emb",
        ("apply_rotary_pos_emb",),
        "apply_rotary",
    ),
    RealKernel(
        "liger_rms_norm",
        "Liger-Kernel",
        LIGER,
        "liger_kernel",
        "liger_kernel.ops.rms_norm",
        ("rms_norm_forward",),
        "rmsnorm",
        bindings={"rsqrt": _LIGER_LIBDEVICE.format("rsqrt")},
        interpreter_gap=_SCALAR_GAP,
        interpreter_error=_SCALAR_ERROR,
    ),
    RealKernel(
        "liger_swiglu",
        "Liger-Kernel",
        LIGER,
        "liger_kernel",
        "liger_kernel.ops.swiglu",
        ("swiglu_forward",),
        "silu_and_mul",
        interpreter_gap=_SCALAR_GAP,
        interpreter_error=_SCALAR_ERROR,
    ),
    RealKernel(
        "liger_swiglu_fused_gate_up",
        "Liger-Kernel",
        LIGER,
        "liger_kernel",
        "liger_kernel.ops.swiglu",
        ("swiglu_fused_gate_up_forward",),
        "silu_and_mul",
    ),
    RealKernel(
        "liger_geglu",
        "Liger-Kernel",
        LIGER,
        "liger_kernel",
        "liger_kernel.ops.geglu",
        ("geglu_forward",),
        "gelu_tanh_and_mul",
        bindings={"tanh": _LIGER_LIBDEVICE.format("tanh")},
        interpreter_gap="libdevice.tanh has no interpreter implementation (and triton.language.math no tanh)",
        interpreter_error="NoneType",
    ),
    RealKernel(
        "liger_rope",
        "Liger-Kernel",
        LIGER,
        "liger_kernel",
        "liger_kernel.ops.rope",
        ("rope_forward",),
        "apply_rotary",
    ),
)


# --- sources ---------------------------------------------------------------------------------------------


def release_root(requirement: str, cache: Path | None = None) -> Path:
    """The unpacked release, downloaded into the release cache on first use. `cache` is a kernelbot cache
    root (as $KERNELBOT_CACHE: releases under sources/) that may hold a pre-downloaded wheel under
    sources/downloads/ or an unpacked tree, for machines without the package registry."""
    from extractors.release_sources import fetch_release

    return fetch_release(requirement, cache=Path(cache) / "sources" if cache is not None else None)


def assemble(kernel: RealKernel, cache: Path | None = None) -> str:
    """The candidate's source: the release's lifted text, then our wrapper."""
    wrapper = kernel.wrapper_path.read_text()
    provided = _top_level_names(wrapper)
    root = release_root(kernel.requirement, cache)
    names = (*kernel.names, *(n for n in kernel.aliases if n not in kernel.names))
    lifted = Lifter(root, kernel.package).lift(
        kernel.module, names, provided, kernel.bindings, kernel.aliases
    )
    origins = "\n".join(f"#   {o}" for o in lifted.origins)
    header = (
        f'"""{kernel.project}\'s kernel for the {kernel.task} task, assembled from the {kernel.requirement} '
        f"release\n(kernelbot's real-kernel corpus: {kernel.id}). Above the wrapper mark: the release's own "
        f'text, lifted verbatim."""\n\n# Lifted from {root.name}:\n{origins}\n'
    )
    return f"{header}\n{lifted.source}\n\n{WRAPPER_MARK}\n\n{wrapper}"


def _top_level_names(source: str) -> set[str]:
    names: set[str] = set()
    for statement in cst.parse_module(source).body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = small.targets if isinstance(small, cst.Assign) else ()
                names.update(t.target.value for t in targets if isinstance(t.target, cst.Name))
    return names


# --- tasks -----------------------------------------------------------------------------------------------


def build_task(recipe: TaskRecipe, out: Path, *, gpu: bool = False, cache: Path | None = None) -> Path:
    """Write the task into `out` (replacing it) with the CI or the GPU sizes."""
    sizes = recipe.gpu_sizes if gpu else recipe.ci_sizes
    if out.exists():
        shutil.rmtree(out)
    if recipe.template:
        return _from_template(recipe, sizes, out)
    from extractors.extract import ExtractOptions, extract

    release_root(recipe.requirement, cache)  # into the cache first: extract resolves pypi: through it
    out.parent.mkdir(parents=True, exist_ok=True)
    args = (SPECS / recipe.spec).read_text().replace("{dtype}", GPU_DTYPE if gpu else CI_DTYPE)
    with tempfile.TemporaryDirectory(prefix="kb-spec-") as scratch:
        spec = Path(scratch) / recipe.spec
        spec.write_text(tomli_w.dumps({"sizes": dict(sizes)}) + "\n" + args)
        options = ExtractOptions(
            repo=f"pypi:{recipe.requirement}", function=recipe.function, out=out, spec=spec, name=recipe.key
        )
        _with_cache(cache, lambda: extract(options))
    return out


def _with_cache(cache: Path | None, run):  # type: ignore[no-untyped-def]
    """Run with KERNELBOT_CACHE set to `cache`, so that `pypi:` requirements resolve to its releases."""
    import os

    if cache is None:
        return run()
    previous = os.environ.get("KERNELBOT_CACHE")
    os.environ["KERNELBOT_CACHE"] = str(cache)
    try:
        return run()
    finally:
        if previous is None:
            os.environ.pop("KERNELBOT_CACHE", None)
        else:
            os.environ["KERNELBOT_CACHE"] = previous


def _from_template(recipe: TaskRecipe, sizes: Sizes, out: Path) -> Path:
    import tomllib

    template = TASK_TEMPLATES / recipe.template
    out.mkdir(parents=True)
    for name in ("reference.py", "inputs.py"):
        shutil.copy(template / name, out / name)
    header = tomllib.loads((template / "task.toml").read_text())
    header["cases"] = _cases(sizes)
    (out / "task.toml").write_text(tomli_w.dumps(header))
    return out


def _cases(sizes: Sizes) -> list[dict[str, object]]:
    """Every combination of the listed sizes, named after the ones that vary ("tokens33_inter100")."""
    cases: list[dict[str, object]] = [{}]
    for key, value in sizes.items():
        values = value if isinstance(value, list) else [value]
        cases = [{**c, key: v} for c in cases for v in values]
    varying = [k for k, v in sizes.items() if isinstance(v, list) and len(v) > 1]
    for case in cases:
        case["name"] = "_".join(_label(k, case[k]) for k in varying) or "default"
    return [{"name": c.pop("name"), **c} for c in cases]


def _label(key: str, value: object) -> str:
    return str(value) if isinstance(value, str) else f"{key}{value}"
