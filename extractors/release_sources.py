"""Sources of a released package, obtained the way a user without a git clone could: `pip download --no-deps`
of a pinned release into a cache directory, unpacked to its Python files: the Python part of a wheel (compiled
extensions are never needed to read and extract code), or an sdist when the release has no wheel.

The cache ($KERNELBOT_CACHE/sources, default ~/.cache/kernelbot/sources) is reused between runs, so only the
first use needs the package registry.
"""

from __future__ import annotations

import os
import re
import sys
import tarfile
import zipfile
from pathlib import Path

from evaluators.subprocesses import run
from extractors.errors import ExtractionError

_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_MARKER = ".kernelbot-unpacked"
# Fallback wheel tags for packages that publish only binary wheels (LMDeploy): any CPython 3.11 manylinux
# wheel holds the same Python sources.
_FALLBACK_TAGS = ("--platform", "manylinux2014_x86_64", "--python-version", "3.11", "--implementation", "cp")


def cache_dir() -> Path:
    root = os.environ.get("KERNELBOT_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "kernelbot"
    return base / "sources"


def fetch_release(requirement: str, cache: Path | None = None, timeout: float = 600.0) -> Path:
    """Directory holding the unpacked Python sources of `name==version` (downloaded on first use)."""
    match = _REQUIREMENT.match(requirement.strip())
    if not match:
        raise ExtractionError(f"{requirement!r}: pin a release as name==version (e.g. sglang==0.5.9)")
    name, version = match.groups()
    cache = cache or cache_dir()
    target = cache / f"{_normal(name)}-{version}"
    if (target / _MARKER).is_file():
        return target
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = _find_archive(downloads, name, version) or _download(requirement, downloads, timeout)
    _unpack(archive, target)
    (target / _MARKER).write_text(f"{archive.name}\n")
    return target


def _download(requirement: str, downloads: Path, timeout: float) -> Path:
    name, version = _REQUIREMENT.match(requirement).groups()  # type: ignore[union-attr]
    # A wheel first: pip must build an sdist's metadata (build dependencies, minutes) to download it, and a
    # wheel holds the same Python sources. An sdist only when no wheel exists.
    attempts = [
        ["--only-binary", ":all:"],  # a wheel for this machine (pure-Python ones fit everywhere)
        ["--only-binary", ":all:", *_FALLBACK_TAGS],  # a wheel for the usual Linux x86-64 CPython
        ["--no-binary", ":all:"],  # an sdist
    ]
    errors: list[str] = []
    for extra in attempts:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "--dest",
            str(downloads),
            *extra,
            requirement,
        ]
        done = run(cmd, timeout_s=timeout)
        if done.timed_out:
            errors.append(f"pip download timed out after {timeout:.0f}s")
            continue
        found = _find_archive(downloads, name, version)
        if done.returncode == 0 and found is not None:
            return found
        last = (done.stderr or done.stdout).strip().splitlines()[-1:]
        errors.append(last[0] if last else "(no output)")
    detail = "; ".join(errors)
    raise ExtractionError(f"could not download {requirement} from the package registry: {detail}")


def _find_archive(downloads: Path, name: str, version: str) -> Path | None:
    stem = _normal(name)
    for path in sorted(downloads.iterdir()):
        lower = path.name.lower().replace("-", "_")
        if lower.startswith(f"{stem}_{version.lower()}") and path.suffix in (".whl", ".gz", ".zip"):
            return path
    return None


def _unpack(archive: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        import shutil

        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    try:
        if archive.suffix == ".whl" or archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zf:
                for member_name in zf.namelist():
                    if _wanted(member_name):
                        _safe_extract_zip(zf, member_name, partial)
        else:
            with tarfile.open(archive) as tf:
                for member in tf.getmembers():
                    if member.isfile() and _wanted(member.name):
                        _safe_extract_tar(tf, member, partial)
            _flatten_sdist(partial)
    except (zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
        raise ExtractionError(f"cannot unpack {archive}: {exc}") from exc
    if target.exists():
        import shutil

        shutil.rmtree(target)
    partial.rename(target)


def _wanted(member: str) -> bool:
    return member.endswith(".py") or member.endswith(("dist-info/METADATA", "PKG-INFO"))


def _safe_extract_zip(zf: zipfile.ZipFile, member: str, dest: Path) -> None:
    path = (dest / member).resolve()
    if not str(path).startswith(str(dest.resolve())):
        raise ExtractionError(f"refusing archive member outside the target: {member}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zf.read(member))


def _safe_extract_tar(tf: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> None:
    path = (dest / member.name).resolve()
    if not str(path).startswith(str(dest.resolve())):
        raise ExtractionError(f"refusing archive member outside the target: {member.name}")
    data = tf.extractfile(member)
    if data is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.read())


def _flatten_sdist(root: Path) -> None:
    """An sdist unpacks into one `<name>-<version>/` folder: lift its content up."""
    children = [p for p in root.iterdir()]
    if len(children) == 1 and children[0].is_dir():
        inner = children[0]
        for item in inner.iterdir():
            item.rename(root / item.name)
        inner.rmdir()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()
