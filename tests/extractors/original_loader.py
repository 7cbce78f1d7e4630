"""Imports a module of an unpacked SGLang/LMDeploy release *as released*, to compare its functions with the
extracted references. Neither package imports with torch alone (tqdm, transformers, pydantic, sgl_kernel...),
so third-party packages that are not installed are replaced, for the duration of the import, by permissive
fakes; the code under test is still the original file, executing in its own module with its own helpers.
`torch.compile` is disabled so the original runs eagerly, like the reference."""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path

ALWAYS_FAKE = {"pydantic", "transformers", "requests", "fastapi", "uvicorn", "openai", "huggingface_hub"}


class _FakeBase:
    def __init_subclass__(cls, **kwargs: object) -> None:
        pass

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass


class _Anything:
    """Stands for any attribute of a missing package: callable, subscriptable, usable as a base class."""

    def __init__(self, name: str = "fake") -> None:
        self._name = name

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

    def __setattr__(self, attr: str, value: object) -> None:
        object.__setattr__(self, attr, value)

    def __mro_entries__(self, bases: tuple) -> tuple:  # type: ignore[type-arg]
        return (_FakeBase,)

    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

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
        module.__path__ = []  # a package, so submodules import too
        module.__file__ = f"<fake {spec.name}>"
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _FakeMissing(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: anything no real finder found becomes a fake package. First on it (front=True):
    packages that are installed but choke on fakes elsewhere (pydantic builds schemas of faked types)."""

    def __init__(self, roots: tuple[str, ...], front: bool) -> None:
        self.roots = roots
        self.front = front

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        root = fullname.split(".")[0]
        if root in self.roots or root in sys.stdlib_module_names or (self.front and root not in ALWAYS_FAKE):
            return None
        return importlib.machinery.ModuleSpec(fullname, _FakeLoader(), is_package=True)


@contextlib.contextmanager
def original_modules(source_root: Path, packages: tuple[str, ...]) -> Iterator[None]:
    """Inside: `importlib.import_module("sglang.srt...")` loads the released file; outside, all is undone."""
    saved_modules = dict(sys.modules)
    saved_path = list(sys.path)
    front, back = _FakeMissing(packages, True), _FakeMissing(packages, False)
    old_env = os.environ.get("TORCH_COMPILE_DISABLE")
    os.environ["TORCH_COMPILE_DISABLE"] = "1"
    import torch._dynamo

    old_disable = torch._dynamo.config.disable
    torch._dynamo.config.disable = True
    sys.path.insert(0, str(source_root))
    sys.meta_path.insert(0, front)
    sys.meta_path.append(back)
    try:
        yield
    finally:
        sys.meta_path.remove(front)
        sys.meta_path.remove(back)
        sys.path[:] = saved_path
        for name in list(sys.modules):
            if name not in saved_modules:
                del sys.modules[name]
        torch._dynamo.config.disable = old_disable
        if old_env is None:
            os.environ.pop("TORCH_COMPILE_DISABLE", None)
        else:
            os.environ["TORCH_COMPILE_DISABLE"] = old_env


def load_original(module: str) -> types.ModuleType:
    return importlib.import_module(module)
