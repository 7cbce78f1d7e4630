"""Which written bundles may become a pull request: none whose tests could not run, none whose end-to-end
benchmark got measurably worse; a change inside the noise or a measured gain may."""

from __future__ import annotations

from types import SimpleNamespace

from kernelbot.propose.evidence import E2EEvidence, MicrobenchEvidence
from kernelbot.target.proposal import pr_refusal

PASSED = {"ok": True, "tests": {"new_failures": []}}


def _e2e(low: float, high: float, *, higher_is_better: bool = True) -> SimpleNamespace:
    claimed = low > 0 if higher_is_better else high < 0
    regressed = high < 0 if higher_is_better else low > 0
    e2e = E2EEvidence(
        measured=True,
        reason="",
        metric="tokens_per_s",
        higher_is_better=higher_is_better,
        delta_pct=(low + high) / 2,
        ci_low_pct=low,
        ci_high_pct=high,
        claimed=claimed,
        regressed=regressed,
    )
    return SimpleNamespace(e2e=e2e, microbenchmarks=UNTIMED)


UNTIMED = MicrobenchEvidence(
    measured=False, reason="not measured on this machine (CPU interpreter)", regime="graph"
)


def test_a_measured_regression_opens_no_pull_request() -> None:
    refusal = pr_refusal(PASSED, _e2e(-41.4, -3.0))
    assert refusal is not None
    assert "made the end-to-end benchmark worse: tokens_per_s -22.2 % (95 % CI [-41.4 %, -3.0 %])" in refusal
    assert pr_refusal(PASSED, _e2e(2.0, 6.0, higher_is_better=False)) is not None  # a latency that grew


def test_noise_and_gains_may_be_proposed() -> None:
    assert pr_refusal(PASSED, _e2e(-35.1, 10.3)) is None  # no claim either way: the body says so
    assert pr_refusal(PASSED, _e2e(3.6, 4.4)) is None
    unmeasured = SimpleNamespace(e2e=E2EEvidence(measured=False, reason="no GPU"), microbenchmarks=UNTIMED)
    assert pr_refusal(PASSED, unmeasured) is None


def test_tests_that_could_not_run_open_no_pull_request() -> None:
    verify = {"ok": True, "tests": {"cannot_run": "import sglang: no module named 'sgl_kernel'"}}
    refusal = pr_refusal(verify, _e2e(3.6, 4.4))
    assert refusal is not None and "tests could not run: import sglang" in refusal


def test_a_kernel_that_does_not_beat_the_current_path_opens_no_pull_request() -> None:
    slower = MicrobenchEvidence(
        measured=True,
        reason="",
        regime="graph",
        beats_current_path=False,
        not_faster_than_current=("t1_d2048_bf16 (graph)",),
    )
    gain = _e2e(3.6, 4.4)
    refusal = pr_refusal(PASSED, SimpleNamespace(e2e=gain.e2e, microbenchmarks=slower))
    assert refusal is not None and "does not beat what the engine runs today" in refusal
    assert "t1_d2048_bf16 (graph)" in refusal
