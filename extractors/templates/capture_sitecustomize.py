"""kernelbot capture bootstrap: imported at interpreter start (as `sitecustomize`) in the command being
captured. When the target's module is imported, the target is wrapped; its first distinct calls are saved
to KERNELBOT_CAPTURE_CONFIG's `out` folder as callN.pt (dict(args=..., kwargs=...)) plus calls.json."""

import functools
import importlib.abc
import json
import os
import sys

with open(os.environ["KERNELBOT_CAPTURE_CONFIG"]) as _fh:
    _CONFIG = json.load(_fh)
# (type comments: this file runs in the captured command's interpreter, whatever its version)
_SEEN = set()  # type: set[tuple]
_RECORDS = []  # type: list[dict]
_SCALARS = (bool, int, float, str, type(None))


def _describe(value):
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype), tuple(value.stride()), value.device.type)
    if isinstance(value, _SCALARS):
        return ("scalar", repr(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_describe(v) for v in value))
    if isinstance(value, torch.dtype):
        return ("dtype", str(value))
    return ("unsupported", type(value).__qualname__)


def _snapshot(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone().cpu()
    if isinstance(value, (tuple, list)):
        return type(value)(_snapshot(v) for v in value)
    return value


def _stats(name, value, into):
    import torch

    if isinstance(value, torch.Tensor):
        entry = {
            "shape": list(value.shape),
            "dtype": str(value.dtype).replace("torch.", ""),
            "stride": list(value.stride()),
            "device": value.device.type,
        }
        if value.numel():
            as_float = value.detach().double()
            entry.update(min=float(as_float.min()), max=float(as_float.max()))
        into[name] = entry
    elif isinstance(value, _SCALARS):
        into[name] = {"value": repr(value)}
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            _stats(f"{name}[{i}]", item, into)


def _record(args, kwargs):
    import torch

    if len(_RECORDS) >= _CONFIG["max_calls"]:
        return
    key = (tuple(_describe(a) for a in args), tuple(sorted((k, _describe(v)) for k, v in kwargs.items())))
    if key in _SEEN:
        return
    _SEEN.add(key)
    unsupported = [d[1] for d in [*key[0], *(v for _, v in key[1])] if d[0] == "unsupported"]
    names = _CONFIG["positional"]
    summary = {}
    for i, value in enumerate(args):
        _stats(names[i] if i < len(names) else f"args[{i}]", value, summary)
    for name, value in kwargs.items():
        _stats(name, value, summary)
    entry = {"call": f"call{len(_RECORDS)}", "arguments": summary}
    if unsupported:
        entry["skipped"] = "arguments of types the task cannot hold: " + ", ".join(sorted(set(unsupported)))
    else:
        blob = {"args": [_snapshot(a) for a in args], "kwargs": {k: _snapshot(v) for k, v in kwargs.items()}}
        torch.save(blob, os.path.join(_CONFIG["out"], entry["call"] + ".pt"))
    _RECORDS.append(entry)
    with open(os.path.join(_CONFIG["out"], "calls.json"), "w") as fh:
        json.dump(_RECORDS, fh, indent=1)


def _wrap_function(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            _record(args, kwargs)
        except Exception as exc:  # recording must never break the program being observed
            sys.stderr.write(f"kernelbot capture: could not record a call: {exc!r}\n")
        return fn(*args, **kwargs)

    return wrapper


def _wrap_method(fn):
    attributes = _CONFIG["attribute_params"]

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        try:
            state = {param: getattr(self, attr) for attr, param in attributes.items() if hasattr(self, attr)}
            _record(args, {**kwargs, **state})
        except Exception as exc:
            sys.stderr.write(f"kernelbot capture: could not record a call: {exc!r}\n")
        return fn(self, *args, **kwargs)

    return wrapper


def _install(module):
    parts = _CONFIG["qualname"].split(".")
    owner = module
    for part in parts[:-1]:
        owner = getattr(owner, part)
    raw = owner.__dict__[parts[-1]] if isinstance(owner, type) else getattr(owner, parts[-1])
    if isinstance(raw, staticmethod):
        setattr(owner, parts[-1], staticmethod(_wrap_function(raw.__func__)))
    elif isinstance(owner, type):
        setattr(owner, parts[-1], _wrap_method(raw))
    else:
        setattr(owner, parts[-1], _wrap_function(raw))
    sys.stderr.write(f"kernelbot capture: wrapped {_CONFIG['module']}:{_CONFIG['qualname']}\n")


class _WrapOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _CONFIG["module"]:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            _install(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _WrapOnImport())

# Chain to a sitecustomize the environment already had (ours shadows it on sys.path).
_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    if os.path.abspath(_entry or ".") == _here:
        continue
    _candidate = os.path.join(_entry or ".", "sitecustomize.py")
    if os.path.isfile(_candidate):
        with open(_candidate) as _fh:
            exec(compile(_fh.read(), _candidate, "exec"), {"__name__": "sitecustomize"})
        break
