"""Lets a generated test import the modules of an unpacked SGLang/LMDeploy release on a machine that has only
torch and triton: third-party packages that are not installed become permissive fakes for the run, as in
tests/extractors/original_loader.py, with two additions newer releases need:

- classes deriving from a fake base behave as records (their annotated fields are set from the
  constructor's arguments), because SGLang 0.5.23 builds registries of msgspec.Struct-like specs at import
  time and reads their fields back;
- a package's own `__init__.py` can be left unexecuted (`skip_init`): SGLang 0.5.23's patches
  transformers' classes on import, which no fake survives, and nothing the tests touch needs it.

The code under test is still the release's own files, run in their own modules.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path

ALWAYS_FAKE = {"pydantic", "transformers", "requests", "fastapi", "uvicorn", "openai", "huggingface_hub"}


class _FakeRecord:
    def __init_subclass__(cls, **kwargs: object) -> None:
        pass

    def __init__(self, *args: object, **kwargs: object) -> None:
        fields: list[str] = []
        for klass in reversed(type(self).__mro__):
            fields += [name for name in getattr(klass, "__annotations__", {}) if name not in fields]
        for name, value in [*zip(fields, args, strict=False), *kwargs.items()]:
            object.__setattr__(self, name, value)


class _Anything:
    """Any attribute of a missing package: callable, subscriptable, iterable (empty), usable as a base."""

    def __init__(self, name: str = "fake") -> None:
        object.__setattr__(self, "_name", name)

    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if len(args) == 1 and not kwargs and callable(args[0]) and not self._name.endswith("dumps"):
            return args[0]  # used as a decorator: keep the function
        if self._name.endswith((".hex", ".decode", ".__str__")):
            return ""
        return _Anything(self._name + "()")

    def __getattr__(self, attr: str) -> _Anything:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Anything(f"{self._name}.{attr}")

    def __getitem__(self, item: object) -> _Anything:
        return _Anything(self._name + "[]")

    def __setitem__(self, item: object, value: object) -> None:
        pass

    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __mro_entries__(self, bases: tuple) -> tuple:  # type: ignore[type-arg]
        return (_FakeRecord,)

    def __iter__(self) -> Iterator[object]:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __or__(self, other: object) -> _Anything:
        return self

    __ror__ = __or__


class _FakeModule(types.ModuleType):
    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Anything(f"{self.__name__}.{attr}")


class _FakeLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _FakeModule(spec.name)
        module.__path__ = []
        module.__file__ = f"<fake {spec.name}>"
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _FakeMissing(importlib.abc.MetaPathFinder):
    def __init__(self, roots: tuple[str, ...], front: bool) -> None:
        self.roots = roots
        self.front = front

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        root = fullname.split(".")[0]
        if root in self.roots or root in sys.stdlib_module_names or (self.front and root not in ALWAYS_FAKE):
            return None
        return importlib.machinery.ModuleSpec(fullname, _FakeLoader(), is_package=True)


@contextlib.contextmanager
def release_modules(
    source_root: Path, packages: tuple[str, ...], skip_init: tuple[str, ...] = ()
) -> Iterator[None]:
    """Inside: the release's modules import from `source_root`, missing third-party packages faked."""
    os.environ["TORCH_COMPILE_DISABLE"] = "1"
    # torch and triton import optional packages of their own: import them for real before any fake exists.
    import torch._dynamo
    import triton.language  # noqa: F401

    torch._dynamo.config.disable = True
    sys.path.insert(0, str(source_root))
    for name in skip_init:
        package = types.ModuleType(name)
        package.__path__ = [str(source_root / name.replace(".", "/"))]
        sys.modules[name] = package
    front, back = _FakeMissing(packages, True), _FakeMissing(packages, False)
    sys.meta_path.insert(0, front)
    sys.meta_path.append(back)
    try:
        yield
    finally:
        sys.meta_path.remove(front)
        sys.meta_path.remove(back)
