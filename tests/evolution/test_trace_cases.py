"""Which case the Inductor writer traces per dtype group (evolution.writers.tracing.cases.choose_cases): a
group whose only case has one token is traced at a proxy token count, since a capture at one token bakes the
size into the kernels (a float16 kernel that then wrote one row whatever the batch); other groups keep their
own case."""

from __future__ import annotations

from pathlib import Path

from evaluators.task import load_task
from evolution.writers.tracing.cases import PROXIES, choose_cases
from tests.example_tasks import ONE_TOKEN_FP16, silu_and_mul_task


def test_a_group_with_one_token_only_is_traced_at_a_proxy_size(tmp_path: Path) -> None:
    chosen, notes = choose_cases(load_task(silu_and_mul_task(tmp_path, cases=ONE_TOKEN_FP16)), "cpu", None)
    traced = {case.name: (case.params["tokens"], args[0].shape[0]) for case, args, _ in chosen}
    assert traced["t64_bf16"] == (64, 64)  # bfloat16 has a case of its own with more than one token
    (name, (tokens, rows)), *_ = [(n, t) for n, t in traced.items() if n.startswith("t1_fp16")]
    assert tokens in PROXIES and rows == tokens and name == f"t1_fp16 at tokens = {tokens}"
    assert notes == []
