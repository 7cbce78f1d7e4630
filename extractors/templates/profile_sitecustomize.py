"""kernelbot scan bootstrap: imported at interpreter start (as `sitecustomize`) in the profiled command. Runs
the whole program under torch.profiler (with Python stacks) and, at exit, attributes every operator's host
time, device time and kernel count to the innermost frame inside the repository; writes JSON to
KERNELBOT_PROFILE_CONFIG's `out`. CUDA graphs' captures and replays are marked as profiler ranges, so that
kernels replayed from a graph are attributed through the capture that recorded them
(kernelbot_profile_attribution, copied beside this file, does the attribution)."""

import atexit
import contextlib
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
    cuda = torch.cuda.is_available()
    if cuda:
        activities.append(ProfilerActivity.CUDA)
        _mark_graphs(torch)
    extra = {}
    if cuda:  # some torch builds record Python stacks beside CUDA activity only in verbose mode
        with contextlib.suppress(AttributeError, TypeError):
            extra["experimental_config"] = torch._C._profiler._ExperimentalConfig(verbose=True)
    prof = profile(activities=activities, with_stack=True, record_shapes=False, **extra)
    prof.__enter__()
    return prof, cuda


def _mark_graphs(torch):
    """Wrap every CUDA graph's capture and replay in a profiler range naming the graph (and the replay)."""
    graph_type = getattr(torch.cuda, "CUDAGraph", None)
    if graph_type is None or getattr(graph_type, "_kernelbot_marked", False):
        return
    ids, ranges, counter = {}, {}, [0]
    record = torch.autograd.profiler.record_function

    def graph_id(graph):
        return ids.setdefault(id(graph), len(ids))

    original_begin, original_end = graph_type.capture_begin, graph_type.capture_end
    original_replay = graph_type.replay

    def capture_begin(self, *args, **kwargs):
        marker = record(f"kernelbot::graph_capture::{graph_id(self)}::0")
        marker.__enter__()
        ranges[id(self)] = marker
        return original_begin(self, *args, **kwargs)

    def capture_end(self, *args, **kwargs):
        try:
            return original_end(self, *args, **kwargs)
        finally:
            marker = ranges.pop(id(self), None)
            if marker is not None:
                marker.__exit__(None, None, None)

    def replay(self, *args, **kwargs):
        counter[0] += 1
        with record(f"kernelbot::graph_replay::{graph_id(self)}::{counter[0]}"):
            return original_replay(self, *args, **kwargs)

    graph_type.capture_begin, graph_type.capture_end, graph_type.replay = capture_begin, capture_end, replay
    graph_type._kernelbot_marked = True


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


# (a type comment: this file runs in the profiled command's interpreter, whatever its version)
_FILES = {}  # type: dict[str, bool]


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


# Operators that already are a tuned library kernel (GEMMs, convolutions, fused attention): their time is
# reported apart, since a fused Triton kernel around them cannot beat what they do inside.
_LIBRARY_OP = re.compile(
    r"^aten::(_?(add|b|baddb|addb)?mm|_addmm_activation|_scaled_mm|_int_mm|\w*convolution\w*|"
    r"_scaled_dot_product_\w+|_flash_attention\w*|_efficient_attention\w*|_cudnn_attention\w*)$"
)


def _tolerate_undecodable_text():
    """Some torch builds (2.13) record a Python frame whose name points at freed memory (the code object of
    a module that was imported while profiling); reading it raises UnicodeDecodeError inside torch's own
    parsing of the trace and loses the whole profile. Such a name or stack reads as empty instead: that
    one event is left out, the rest is kept."""
    import torch

    event_type = getattr(torch._C._autograd, "_KinetoEvent", None)
    for attribute, empty in (("name", ""), ("stack", [])):
        original = getattr(event_type, attribute, None)
        if original is None or getattr(original, "_kernelbot_tolerant", False):
            continue

        def tolerant(self, _original=original, _empty=empty):
            try:
                return _original(self)
            except UnicodeDecodeError:
                return type(_empty)()

        tolerant._kernelbot_tolerant = True
        # A build whose event type is closed to new attributes has nothing to work around.
        with contextlib.suppress(AttributeError, TypeError):
            setattr(event_type, attribute, tolerant)


def _finish(prof, cuda):
    try:
        _tolerate_undecodable_text()
        prof.__exit__(None, None, None)
        from kernelbot_profile_attribution import Event, attribute, graph_marker

        events = []
        for event in prof.events():
            if not event.name or _frame(event.name) is not None:
                continue  # a Python function, not an operator
            chain, parent = [event.name], getattr(event, "cpu_parent", None)
            while parent is not None:
                chain.append(parent.name)
                parent = getattr(parent, "cpu_parent", None)
            device = getattr(event, "self_device_time_total", None)
            if device is None:
                device = getattr(event, "self_cuda_time_total", 0.0)
            if event.name.startswith("kernelbot::graph_replay::"):  # the range's own total: a fallback
                device = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0.0)
            kernels = [float(getattr(k, "duration", 0.0) or 0.0) for k in getattr(event, "kernels", []) or []]
            events.append(
                Event(
                    name=event.name,
                    start_us=float(getattr(event.time_range, "start", 0.0) or 0.0),
                    owner=_owner(event),
                    host_us=float(getattr(event, "self_cpu_time_total", 0.0) or 0.0),
                    device_us=float(device or 0.0),
                    kernels=kernels,
                    library=bool(_LIBRARY_OP.match(event.name)),
                    graph=graph_marker(chain),
                )
            )
        with open(_CONFIG["out"], "w") as fh:
            json.dump({"cuda": cuda, "rows": attribute(events)}, fh)
    except Exception as exc:  # never turn the profiled program's exit into a crash
        sys.stderr.write(f"kernelbot scan: profiling failed: {exc!r}\n")


_prof, _cuda = _start()
atexit.register(_finish, _prof, _cuda)
