"""Where the worker's libraries live: the directories a candidate's calls may read through torch or Triton.

The interpreter's prefixes and install schemes hold the standard library and site-packages, but torch or
Triton may live elsewhere: in user-site, on PYTHONPATH, or in a directory a `.pth` file adds. So the roots
also take the location of every top-level package imported when the sandbox is installed (torch, triton,
numpy and what they pulled in), with the distribution metadata (`*.dist-info`, `*.egg-info`) beside it,
which importlib.metadata reads. The evaluator's own packages and anything under a protected path (the task,
the harness) never become a root, and the roots are computed once, before the candidate is imported, so
nothing it brings in widens them.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from types import ModuleType

METADATA_SUFFIXES = (".dist-info", ".egg-info")


def norm_path(path: str | os.PathLike[str]) -> str:
    return os.path.normcase(os.path.realpath(os.fspath(path)))


def interpreter_roots() -> set[str]:
    """The interpreter's standard library, site-packages and prefixes."""
    paths = sysconfig.get_paths()
    roots = {
        paths["stdlib"],
        paths["platstdlib"],
        paths["purelib"],
        paths["platlib"],
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
    }
    return {norm_path(r) for r in roots if r}


def package_locations(module: ModuleType) -> list[str]:
    """Where one imported top-level module lives: a package's directories (a namespace package may have
    several), a plain module's file; none for built-in and frozen modules."""
    path = getattr(module, "__path__", None)
    if path is not None:
        try:
            return [norm_path(p) for p in list(path) if p and os.path.isdir(p)]
        except TypeError:  # a __path__ that is not a list of paths (some lazy importers)
            return []
    file = getattr(module, "__file__", None)
    return [norm_path(file)] if isinstance(file, str) and os.path.isfile(file) else []


def library_roots(
    excluded_packages: Iterable[str],
    excluded_paths: Iterable[str],
    modules: Mapping[str, ModuleType] | None = None,
) -> tuple[str, ...]:
    """The interpreter's roots plus where the imported top-level packages live (outside those), with their
    sites' distribution metadata. `excluded_packages` (the evaluator's) and anything under
    `excluded_paths` (normalised; the task, the harness, the candidate's directory) are left out."""
    roots = interpreter_roots()
    blocked = tuple(excluded_paths)
    skip = set(excluded_packages) | {"__main__"}
    sites: set[str] = set()
    for name, module in list((sys.modules if modules is None else modules).items()):
        if "." in name or name in skip or not isinstance(module, ModuleType):
            continue
        for location in package_locations(module):
            if _under(location, roots) or _under(location, blocked) or location in (os.sep, ""):
                continue
            roots.add(location)
            sites.add(os.path.dirname(location))
    for site in sorted(sites):
        roots.update(_metadata_dirs(site, blocked))
    return tuple(sorted(roots))


def _metadata_dirs(site: str, blocked: tuple[str, ...]) -> list[str]:
    try:
        names = os.listdir(site)
    except OSError:
        return []
    found = [norm_path(os.path.join(site, n)) for n in names if n.endswith(METADATA_SUFFIXES)]
    return [d for d in found if os.path.isdir(d) and not _under(d, blocked)]


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)
