"""Where the integration writes: the kernel module (by the profile's placement rule), the package
`__init__.py` that exports it (when the profile asks), and the generated test; each as a repo-root relative
path and, for modules, a dotted name under the source root."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kernelbot.engines.model import Profile
from kernelbot.integrate.errors import IntegrationError


@dataclass(frozen=True)
class Placement:
    source_file: Path  # the module holding the function to rewrite
    source_module: str
    kernel_file: Path
    kernel_module: str
    init_file: Path | None  # the package __init__.py to export the kernel from
    test_file: Path


def place(profile: Profile, source_path: str, op: str, kernel_file: PurePosixPath | None = None) -> Placement:
    """Where the files go; `kernel_file` (an engine convention's choice) replaces the profile's rule."""
    source = PurePosixPath(source_path)
    root = PurePosixPath(profile.source_root) if profile.source_root else PurePosixPath()
    if root.parts and source.parts[: len(root.parts)] != root.parts:
        raise IntegrationError(
            f"{source_path} is not under the source root {root}/ of profile {profile.name}"
        )
    stem = profile.kernel.module.format(op=op)
    if kernel_file is not None:
        kernel = kernel_file
    elif profile.kernel.rule == "beside-source":
        kernel = source.parent / f"{stem}.py"
    else:
        kernel = root / profile.kernel.directory / f"{stem}.py"
    init = kernel.parent / "__init__.py" if profile.kernel.export_from_init else None
    test = PurePosixPath(profile.tests.directory) / profile.tests.file.format(op=op)
    return Placement(
        source_file=Path(source),
        source_module=_dotted(source, root),
        kernel_file=Path(kernel),
        kernel_module=_dotted(kernel, root),
        init_file=Path(init) if init else None,
        test_file=Path(test),
    )


def _dotted(path: PurePosixPath, root: PurePosixPath) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        raise IntegrationError(f"{path} is not an importable module path")
    return ".".join(parts)
