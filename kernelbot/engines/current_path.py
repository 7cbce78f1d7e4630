"""What the engine runs today, on a CUDA GPU, for the function a kernel replaces: the baseline reviewers ask
for besides eager and torch.compile (the confirmation's "current path" column).

Read from the source tree, per the engine's convention:
- an op of SGLang's `BaseFusedOp` contract (and the example engine's): its `forward_cuda` when the class
  defines one, else `forward_native` itself (then the eager column is the current path);
- an LMDeploy `Default<Op>Impl.forward`: the Impl that `backends/cuda/op_backend.py` builds for the op's
  build spec (`build_op`), else the default Impl itself;
- any other function: itself (a call-site integration routes the function's own calls).

Both engines' CUDA paths are methods of an op or Impl object built from the model's configuration; the
confirmation times callables that take the task's arguments, and builds no such object, so a named method is
reported with why it is not timed, and with the kernel libraries its module imports that are missing here
(sgl-kernel, flashinfer: GPU wheels). The name carries the engine's version as the tree states it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kernelbot.engines.model import Profile
from kernelbot.integrate.map_build_spec import find_mapping, mapped_impl

FUSED_OP_CONVENTIONS = ("sglang", "example")
LMDEPLOY_DEFAULT = PurePosixPath("lmdeploy/pytorch/backends/default")
LMDEPLOY_CUDA = PurePosixPath("lmdeploy/pytorch/backends/cuda")


@dataclass(frozen=True)
class CurrentPath:
    name: str  # the callable, module:qualname, as the engine names it
    version: str  # the engine's version as the tree states it ("" when it states none)
    is_reference: bool  # the current path is the original code: the eager column times it
    reason: str  # why it has no column of its own, in words

    def label(self) -> str:
        version = f" ({self.version})" if self.version else ""
        return f"the engine's current path `{self.name}`{version}"


def current_path(repo: Path, profile: Profile, function: str) -> CurrentPath | None:
    """The current path of `function` (`module:qualname`) in the tree at `repo`, or None when its source
    cannot be read (the confirmation then says the engine names none)."""
    root = repo / profile.source_root if profile.source_root else repo
    path, module, qualname = source_of(repo, root, function)
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    version = engine_version(root, profile.package)
    itself = f"{module}:{qualname}"
    parts = qualname.split(".")
    owner = _class(tree, parts[0]) if len(parts) == 2 else None
    if owner is not None and profile.convention in FUSED_OP_CONVENTIONS and parts[1] == "forward_native":
        if _defines(owner, "forward_cuda"):
            return CurrentPath(
                f"{module}:{parts[0]}.forward_cuda",
                version,
                False,
                _method_reason(f"{parts[0]}.forward_cuda", "the op", tree, profile.package),
            )
        why = f"{parts[0]} has no forward_cuda, so on CUDA it runs forward_native"
        return _itself(itself, version, why)
    if owner is not None and profile.convention == "lmdeploy" and _is_default_impl(path, root, parts):
        today = _lmdeploy_cuda_impl(root, parts[0])
        if today is not None:
            impl_module, impl = today
            cuda_tree = _parse(root / Path(*impl_module.split("."))) if impl_module else None
            return CurrentPath(
                f"{impl_module}:{impl}.forward" if impl_module else f"{impl}.forward",
                version,
                False,
                _method_reason(f"{impl}.forward", "the Impl `build_op` makes", cuda_tree, profile.package),
            )
        return _itself(itself, version, f"CUDA's build_op builds {parts[0]} itself for this op")
    return _itself(itself, version, "the engine calls this function itself on every device")


def source_of(repo: Path, root: Path, function: str) -> tuple[Path, str, str]:
    """(file, dotted module, qualname) of `function`, written `pkg.mod:Qual.name` or as a path
    `pkg/mod.py:Qual.name` (repo- or source-root relative)."""
    module, _, qualname = function.partition(":")
    if module.endswith(".py") or "/" in module:
        path = next((base / module for base in (repo, root) if (base / module).is_file()), root / module)
        try:
            dotted = ".".join(path.relative_to(root).with_suffix("").parts)
        except ValueError:
            dotted = module.removesuffix(".py").replace("/", ".")
        return path, dotted, qualname
    return root / Path(*module.split(".")).with_suffix(".py"), module, qualname


def engine_version(root: Path, package: str) -> str:
    """`<package> <version>` from `<package>/version.py` or `_version.py` (a literal `__version__`), or the
    release's dist-info in the tree; "" when the tree states none."""
    for name in ("version.py", "_version.py"):
        try:
            text = (root / package / name).read_text()
        except OSError:
            continue
        found = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", text, re.M)
        if found:
            return f"{package} {found.group(1)}"
    for info in sorted(root.glob(f"{package}-*.dist-info")) + sorted(
        root.parent.glob(f"{package}-*.dist-info")
    ):
        return f"{package} {info.name.removeprefix(f'{package}-').removesuffix('.dist-info')}"
    return ""


def _itself(function: str, version: str, why: str) -> CurrentPath:
    return CurrentPath(function, version, True, f"{why}; the eager column times it")


def _method_reason(method: str, what: str, tree: ast.Module | None, package: str) -> str:
    text = (
        f"`{method}` is a method of {what}, built from the model's configuration; the confirmation times "
        "callables taking the task's arguments and builds no such object"
    )
    missing = _missing_imports(tree, package) if tree is not None else []
    if missing:
        text += f"; its module imports {', '.join(missing)}, which cannot be imported on this machine"
    return text


def _missing_imports(tree: ast.Module, package: str) -> list[str]:
    """Top-level packages the module imports on CUDA that are not installed here: its unconditional imports
    and those under an `if` that tests CUDA (`if _is_cuda:`), other than the engine's own package."""
    names: list[str] = []
    for node in _cuda_statements(tree.body):
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    missing = []
    for name in dict.fromkeys(names):
        if name == package:
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _cuda_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            if "cuda" in ast.unparse(node.test).lower():
                out += _cuda_statements(node.body)
        elif isinstance(node, ast.Try):
            out += _cuda_statements(node.body)
        else:
            out.append(node)
    return out


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _defines(owner: ast.ClassDef, method: str) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == method for n in owner.body)


def _is_default_impl(path: Path, root: Path, parts: list[str]) -> bool:
    relative = PurePosixPath(path.relative_to(root).as_posix())
    return (
        relative.parent == LMDEPLOY_DEFAULT
        and parts[1] == "forward"
        and parts[0].startswith("Default")
        and parts[0].endswith("Impl")
    )


def _lmdeploy_cuda_impl(root: Path, default_class: str) -> tuple[str, str] | None:
    """(module, Impl) that CUDA's build_op builds for the build spec the default backend builds
    `default_class` from; module "" when build_op's import of it cannot be read."""
    try:
        default_backend = (root / LMDEPLOY_DEFAULT / "op_backend.py").read_text()
        cuda_backend = (root / LMDEPLOY_CUDA / "op_backend.py").read_text()
    except OSError:
        return None
    mapping = find_mapping(default_backend, default_class)
    impl = mapped_impl(cuda_backend, mapping.spec) if mapping else None
    if impl is None or impl == default_class:
        return None
    tree = ast.parse(cuda_backend)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == impl for a in node.names):
            base = ".".join(LMDEPLOY_CUDA.parts[: len(LMDEPLOY_CUDA.parts) - (node.level - 1)])
            return (f"{base}.{node.module}" if node.module else base), impl
    return "", impl


def _parse(path_without_suffix: Path) -> ast.Module | None:
    try:
        return ast.parse(path_without_suffix.with_suffix(".py").read_text())
    except (OSError, SyntaxError):
        return None
