"""kernelbot scan bootstrap: imported at interpreter start (as `sitecustomize`) in the profiled command. Runs
the whole program under torch.profiler (with Python stacks) and, at exit, attributes every operator's host
time, device time and kernel count to the innermost frame inside the repository; writes JSON to
KERNELBOT_PROFILE_CONFIG's `out`."""

import atexit
import json
import os
import re
import sys

with open(os.environ["KERNELBOT_PROFILE_CONFIG"]) as _fh:
    _CONFIG = json.load(_fh)
_ROOT = os.path.realpath(_CONFIG["repo"])


def _start():
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    prof = profile(activities=activities, with_stack=True, record_shapes=False)
    prof.__enter__()
    return prof, torch.cuda.is_available()


_FRAME = re.compile(r"^(.+?\.py)\((\d+)\): (.+)$")


def _frame(entry):
    # "path/to/file.py(123): name" — a Python frame, as an event name or a stack entry
    match = _FRAME.match(entry)
    if match is None:
        return None
    path = match.group(1)
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    return os.path.realpath(path), int(match.group(2)), match.group(3)


_FILES = {}


def _inside(frame):
    if frame is None or not frame[0].startswith(_ROOT + os.sep) or "site-packages" in frame[0]:
        return False
    if (
        frame[0] not in _FILES
    ):  # torch names its own frames relative to site-packages: those do not exist here
        _FILES[frame[0]] = os.path.isfile(frame[0])
    return _FILES[frame[0]]


def _owner(event):
    """Innermost repository frame above an operator: from its recorded stack, else from the Python-function
    events the profiler's tracer nests it in."""
    for entry in getattr(event, "stack", None) or []:
        frame = _frame(entry)
        if _inside(frame):
            return frame
    parent = getattr(event, "cpu_parent", None)
    while parent is not None:
        frame = _frame(parent.name)
        if _inside(frame):
            return frame
        parent = getattr(parent, "cpu_parent", None)
    return None


def _finish(prof, cuda):
    try:
        prof.__exit__(None, None, None)
        totals = {}
        for event in prof.events():
            if _frame(event.name) is not None:
                continue  # a Python function, not an operator
            owner = _owner(event)
            if owner is None:
                continue
            key = f"{owner[0]}:{owner[2]}"
            row = totals.setdefault(
                key,
                {
                    "path": owner[0],
                    "function": owner[2],
                    "lines": [],
                    "host_us": 0.0,
                    "device_us": 0.0,
                    "ops": 0,
                    "kernels": 0,
                },
            )
            if owner[1] not in row["lines"] and len(row["lines"]) < 50:
                row["lines"].append(owner[1])
            row["host_us"] += float(getattr(event, "self_cpu_time_total", 0.0) or 0.0)
            device = getattr(event, "self_device_time_total", None)
            if device is None:
                device = getattr(event, "self_cuda_time_total", 0.0)
            row["device_us"] += float(device or 0.0)
            row["ops"] += 1
            row["kernels"] += len(getattr(event, "kernels", []) or [])
        with open(_CONFIG["out"], "w") as fh:
            json.dump({"cuda": cuda, "rows": list(totals.values())}, fh)
    except Exception as exc:  # never turn the profiled program's exit into a crash
        sys.stderr.write(f"kernelbot scan: profiling failed: {exc!r}\n")


_prof, _cuda = _start()
atexit.register(_finish, _prof, _cuda)
