"""Runs a draft task's reference on its own inputs, in a process of its own, one request per line on stdin.

Request:  {"root": task dir, "cases": [case names], "full": [case names], "repeat": [case names]}
Response: one JSON line per request on the original stdout: for each case, whether it ran, the error and the
reference.py frames it passed through when it did not, the seconds its first run took (inputs and reference,
however far it got), the reference lines it executed (which path it took),
for the cases in "full" also the judge's degenerate verdict, and for those in "repeat" whether the same
seed gives the same outputs.

The reference is the user's code: whatever it prints goes to stderr, and whatever it raises is reported.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

RESPONSES = os.fdopen(os.dup(sys.stdout.fileno()), "w")
sys.stdout = sys.stderr

import torch  # noqa: E402

from evaluators.degenerate import check_degenerate  # noqa: E402
from evaluators.task import load_task  # noqa: E402


def _leaves(value, path="return"):
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}[{key!r}]")


def _run(task, reference, case, trace_file=None):
    lines = set()

    def local(frame, event, arg):
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == trace_file else None

    args, kwargs = task.make_inputs(case, 0, "cpu")
    tensors = [
        (f"argument {i}", a) for i, a in enumerate([*args, *kwargs.values()]) if isinstance(a, torch.Tensor)
    ]
    before = [t.clone() for _, t in tensors]
    if trace_file:
        sys.settrace(tracer)
    try:
        with torch.no_grad():
            result = reference(*args, **kwargs)
    finally:
        sys.settrace(None)
    produced = list(_leaves(result))
    produced += [(n, t) for (n, t), old in zip(tensors, before, strict=True) if not _same(old, t)]
    return produced, lines


def _same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(
            torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)) and torch.equal(a.isnan(), b.isnan())
        )
    return bool(torch.equal(a, b))


def _error(exc, reference_file, inputs_file):
    frames = []
    where = "reference"
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == reference_file:
            frames.append([frame.lineno, frame.name])
        elif frame.filename == inputs_file:
            where = "inputs"
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return {"ok": False, "error": text, "frames": frames, "where": where if not frames else "reference"}


def _one(task, reference, case, full, repeat):
    reference_file = str(task.reference_path)
    started = time.perf_counter()
    try:
        produced, lines = _run(task, reference, case, reference_file)
    except Exception as exc:  # the user's code: report whatever it raised
        seconds = time.perf_counter() - started
        return {**_error(exc, reference_file, str(task.inputs_path)), "seconds": seconds}
    out = {
        "ok": True,
        "seconds": time.perf_counter() - started,
        "lines": sorted(lines),
        "outputs": [f"{n}: {str(t.dtype).replace('torch.', '')}{list(t.shape)}" for n, t in produced],
    }
    if not produced:
        return {
            **out,
            "ok": False,
            "error": "the reference returns no tensor and writes no argument",
            "frames": [],
        }
    if any(t.is_floating_point() and bool(t.isnan().any()) for _, t in produced):
        bad = next(n for n, t in produced if t.is_floating_point() and bool(t.isnan().any()))
        return {**out, "ok": False, "error": f"NaN in {bad}", "frames": [], "nan": True}
    if full:
        try:
            if repeat:
                again, _ = _run(task, reference, case)
                out["deterministic"] = len(again) == len(produced) and all(
                    _same(a, b) for (_, a), (_, b) in zip(produced, again, strict=True)
                )
            out["degenerate"] = check_degenerate(task, "cpu", cases=[case], reference=reference) or ""
        except Exception as exc:  # another seed breaks it
            return {**_error(exc, reference_file, str(task.inputs_path)), "seconds": out["seconds"]}
    return out


def main():
    RESPONSES.write(json.dumps({"ready": True}) + "\n")  # imports done: trials are timed from here
    RESPONSES.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            task = load_task(request["root"])
            reference = task.load_reference()
            full, repeat = set(request.get("full", [])), set(request.get("repeat", []))
            results = {
                name: _one(task, reference, task.case(name), name in full, name in repeat)
                for name in request["cases"]
            }
        except Exception as exc:  # inputs.py or reference.py do not even import
            results = {
                "*": {"ok": False, "error": " ".join(f"{type(exc).__name__}: {exc}".split()), "frames": []}
            }
        RESPONSES.write(json.dumps(results) + "\n")
        RESPONSES.flush()
    # The extraction waits for this process to end: leave without the interpreter's teardown of torch and
    # the reference's modules (a second or more of nothing, once per extraction). Every reply is flushed.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
