"""The pool <-> worker wire protocol: framing, deadlines, nonces, and how a worker's death is put in words."""

from __future__ import annotations

import os
import signal
import time

import pytest

from evaluators.job import (
    Job,
    LineReader,
    Message,
    ProtocolError,
    candidate_sha,
    describe_exit,
    write_all,
)


def test_job_round_trips_through_its_wire_form() -> None:
    job = Job(
        task_dir="/t", source="def f():\n    pass\n", config={"seeds_per_case": 2}, seeds=(7, 9), nonce="ab"
    )
    assert Job.decode(job.encode().rstrip(b"\n")) == job
    assert job.encode().count(b"\n") == 1  # one line, whatever the source holds


def test_message_decode_rejects_what_the_worker_never_sends() -> None:
    assert Message.decode(Message("progress", "n", {"stage": "compile"}).encode()).body == {
        "stage": "compile"
    }
    for garbage in (b"[1, 2]", b'{"nonce": "x"}', b"not json"):
        with pytest.raises(ValueError):
            Message.decode(garbage)


def test_line_reader_times_out_then_reads_split_lines_then_sees_eof() -> None:
    r, w = os.pipe()
    reader = LineReader(r)
    start = time.monotonic()
    assert reader.read_line(0.2) is None and not reader.eof
    assert 0.15 < time.monotonic() - start < 2.0
    write_all(w, b'{"a": 1}\n{"b"')
    assert reader.read_line(1.0) == b'{"a": 1}'
    assert reader.read_line(0.1) is None  # half a line: not yet
    write_all(w, b": 2}\n")
    assert reader.read_line(1.0) == b'{"b": 2}'
    os.close(w)
    assert reader.read_line(1.0) is None and reader.eof
    os.close(r)


def test_line_reader_refuses_an_endless_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evaluators.job.MAX_MESSAGE_BYTES", 1000)
    r, w = os.pipe()
    write_all(w, b"x" * 5000)
    with pytest.raises(ProtocolError):
        LineReader(r).read_line(1.0)
    os.close(r)
    os.close(w)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (-signal.SIGSEGV, "SIGSEGV (segmentation fault)"),
        (-signal.SIGKILL, "OOM killer"),
        (-signal.SIGXFSZ, "passed 64 MB (output flood)"),
        (-signal.SIGABRT, "SIGABRT"),
        (3, "exited with code 3"),
        (0, "without reporting a result"),
    ],
)
def test_describe_exit_names_the_signal(code: int, words: str) -> None:
    assert words in describe_exit(code, output_limit_mb=64)


def test_describe_exit_tells_our_own_kill_apart() -> None:
    assert "killed by the evaluator" in describe_exit(-signal.SIGKILL, killed_by_us=True)


def test_candidate_sha_survives_sources_too_deep_to_normalise() -> None:
    deep = "def f():\n    return " + "+".join(["1"] * 100_000) + "\n"
    assert len(candidate_sha(deep, "f")) == 16
    assert candidate_sha("def f():\n    return 1\n", "f") == candidate_sha(
        "def f():  # c\n    return (1)\n", "f"
    )
