"""evaluators.timing.wall: how many calls one wall sample takes, and what a sample measures (fed, or sync to
sync), on a simulated host clock and GPU stream."""

from __future__ import annotations

import math

import pytest

from evaluators.config import TimingConfig
from evaluators.timing.wall import WallRunner, wall_calls_for

TARGET = TimingConfig().wall_sample_target_us  # 2000 us


@pytest.mark.parametrize(
    ("estimate_us", "calls"),
    [
        (350.0, 6),  # ceil(5.71): the H200's eager reference of a big case, ~2.1 ms per sample
        (600.0, 4),  # ceil(3.33)
        (500.0, 4),  # exactly 4: no extra call for an exact fit
        (2000.0, 1),
        (50_000.0, 1),  # slower than the target on its own: still one call, never zero
    ],
)
def test_a_slow_implementation_takes_fewer_calls(estimate_us: float, calls: int) -> None:
    assert wall_calls_for(estimate_us, TARGET, 10) == calls
    assert calls * estimate_us >= TARGET  # a sample never falls short of the target while calls remain


@pytest.mark.parametrize("estimate_us", [200.0, 30.0, 1.0, 1e-300])
def test_a_fast_implementation_keeps_the_full_count(estimate_us: float) -> None:
    # 1e-300 overflows target / estimate to inf: it must cap, not raise in math.ceil.
    assert wall_calls_for(estimate_us, TARGET, 10) == 10


@pytest.mark.parametrize("estimate_us", [None, 0.0, -5.0, math.nan, math.inf, -math.inf])
def test_an_unusable_estimate_falls_back_to_the_full_count(estimate_us: float | None) -> None:
    assert wall_calls_for(estimate_us, TARGET, 10) == 10


@pytest.mark.parametrize("target_us", [0.0, -1.0, math.nan, math.inf])
def test_a_non_positive_or_non_finite_target_turns_the_adaptation_off(target_us: float) -> None:
    assert wall_calls_for(350.0, target_us, 10) == 10


def test_the_max_calls_cap_holds() -> None:
    # max_calls is already min(wall_calls, the copy budget's cap): no estimate raises the count past it.
    assert wall_calls_for(100.0, TARGET, 3) == 3  # wants 20
    assert wall_calls_for(700.0, TARGET, 3) == 3  # wants exactly 3
    assert wall_calls_for(1000.0, TARGET, 3) == 2
    assert wall_calls_for(1.0, TARGET, 1) == 1
    assert wall_calls_for(None, TARGET, 0) == 1  # a degenerate cap still times one call


# --- fed and sync-to-sync samples on a simulated device -------------------------------------------------


class SimDevice:
    """A host clock and one GPU stream, simulated: host work advances the clock, a launch queues GPU work that
    starts LATENCY_US after it is issued or when the GPU is free (FIFO), a sync waits for the GPU to drain."""

    LATENCY_US = 3.0

    def __init__(self) -> None:
        self.now_us = 0.0
        self.gpu_free_us = 0.0
        self.syncs = 0

    def clock_ns(self) -> int:
        return round(self.now_us * 1000)

    def host(self, us: float) -> None:
        self.now_us += us

    def launch(self, us: float) -> float:
        """Queue `us` of GPU work; returns when it ends."""
        start = max(self.now_us + self.LATENCY_US, self.gpu_free_us)
        self.gpu_free_us = start + us
        return self.gpu_free_us

    def sync(self) -> None:
        self.syncs += 1
        self.now_us = max(self.now_us, self.gpu_free_us) + 1.0  # the sync call itself costs 1 us of host


class SimFeed:
    """The FeedDevice of a SimDevice: a busy-wait launch, then markers that pass when the GPU reaches them."""

    def __init__(self, dev: SimDevice) -> None:
        self.dev = dev
        self.fed_us: list[float] = []
        self.start = self.end = 0.0

    def open(self, feed_us: float) -> None:
        self.fed_us.append(feed_us)
        self.dev.launch(feed_us)
        self.start = self.dev.launch(0.0)

    def close(self) -> None:
        self.end = self.dev.launch(0.0)

    def opened(self) -> bool:
        return self.start <= self.dev.now_us

    def span_us(self) -> float:
        return self.end - self.start


def sim_call(dev: SimDevice, host_us: float, gpu_us: float, syncs: bool = False):
    """An implementation: host work around one kernel launch; optionally waits for the GPU (a .item())."""

    def call(x):
        dev.host(host_us / 2)
        dev.launch(gpu_us)
        dev.host(host_us / 2)
        if syncs:
            dev.sync()
        return x

    return call


def sim_runner(dev: SimDevice, fn, calls: int = 10, fed: bool = True) -> tuple[WallRunner, SimFeed]:
    import torch

    from evaluators.timing.inputs import InputSet

    feed = SimFeed(dev)
    runner = WallRunner(
        fn,
        InputSet(((torch.zeros(4),), {}), []),
        dev.sync,
        calls,
        feed=feed if fed else None,
        clock_ns=dev.clock_ns,
    )
    return runner, feed


def test_a_host_bound_call_costs_its_host_time_and_the_gpu_is_fed_throughout() -> None:
    dev = SimDevice()
    runner, feed = sim_runner(dev, sim_call(dev, host_us=15.0, gpu_us=1.0))
    first = runner.measure()  # sync to sync: sizes the busy-wait
    assert first > 15.0 and runner.mode == "fed"
    samples = [runner.measure() for _ in range(4)]
    assert samples == [pytest.approx(15.0)] * 4  # exactly the host's issue time per call: no sync, no latency
    assert runner.last_gpu_us == pytest.approx(10.0)  # the kernels ran back to back behind the busy-wait
    assert runner.starved == 0 and all(f > 150.0 for f in feed.fed_us)  # it outlasted the host's 150 us
    assert feed.fed_us[-1] == pytest.approx(1.25 * 150.0 + 20.0)


def test_a_gpu_bound_call_costs_its_gpu_time() -> None:
    dev = SimDevice()
    runner, _ = sim_runner(dev, sim_call(dev, host_us=5.0, gpu_us=200.0))
    runner.measure()
    assert [runner.measure() for _ in range(3)] == [pytest.approx(200.0)] * 3
    assert runner.last_host_us == pytest.approx(50.0)


def test_code_that_synchronises_is_recognised_in_warm_up_and_timed_sync_to_sync() -> None:
    dev = SimDevice()
    runner, feed = sim_runner(dev, sim_call(dev, host_us=10.0, gpu_us=5.0, syncs=True))
    warm = [runner.measure() for _ in range(5)]  # the timing stage's WALL_WARMUP_ROUNDS
    assert runner.settle() == "sync" and runner.starved == 3
    assert max(warm[1:4]) > 2 * warm[0]  # the fed samples it took meanwhile waited for the busy-wait
    fed_so_far = len(feed.fed_us)
    # Sync to sync: per call, host 5 us, the kernel (3 us latency + 5 us) overlapping the other 5 us of host
    # work, then its own sync (1 us): 14 us, as in isolation; no busy-wait is charged to it any more.
    per_call = 5.0 + SimDevice.LATENCY_US + 5.0 + 1.0
    assert [runner.measure() for _ in range(3)] == [pytest.approx(per_call, abs=0.2)] * 3
    assert len(feed.fed_us) == fed_so_far


def test_a_single_host_stall_grows_the_busy_wait_but_keeps_the_fed_mode() -> None:
    dev = SimDevice()
    stall = {"us": 0.0}

    def call(x):
        dev.host(15.0 + stall.pop("us", 0.0))
        dev.launch(1.0)
        return x

    runner, feed = sim_runner(dev, call)
    for _ in range(3):
        runner.measure()
    stall["us"] = 1000.0  # an interrupt in the middle of one sample
    hit = runner.measure()
    assert runner.starved == 1 and runner.mode == "fed"
    assert hit == pytest.approx((150.0 + 1000.0) / 10)  # the sample shows it (the ratio fences drop it)
    assert feed.fed_us[-1] == feed.fed_us[-2]  # the stall's sample was fed as sized before it...
    runner.measure()
    assert feed.fed_us[-1] >= 2.0 * feed.fed_us[-2]  # ...and the next one got a longer busy-wait
    assert runner.settle() == "fed" and runner.measure() == pytest.approx(15.0)


def test_after_warm_up_the_mode_never_changes() -> None:
    dev = SimDevice()
    syncing = {"on": False}

    def call(x):
        dev.host(10.0)
        dev.launch(1.0)
        if syncing["on"]:
            dev.sync()
        return x

    runner, _ = sim_runner(dev, call)
    for _ in range(5):
        runner.measure()
    assert runner.settle() == "fed"
    syncing["on"] = True  # starving from now on: counted, the feed grows, the samples stay comparable
    for _ in range(5):
        runner.measure()
    assert runner.mode == "fed" and runner.starved == 5


def test_a_long_first_sample_keeps_every_sample_sync_to_sync() -> None:
    from evaluators.timing.wall import SYNC_ENOUGH_US

    dev = SimDevice()
    runner, feed = sim_runner(dev, sim_call(dev, host_us=10.0, gpu_us=SYNC_ENOUGH_US / 5), calls=10)
    runner.measure()
    assert runner.mode == "sync" and feed.fed_us == []


def test_without_a_feed_device_every_sample_is_sync_to_sync() -> None:
    dev = SimDevice()
    runner, _ = sim_runner(dev, sim_call(dev, host_us=15.0, gpu_us=1.0), fed=False)
    assert runner.mode == "sync"
    syncs = dev.syncs
    value = runner.measure()
    assert dev.syncs == syncs + 2  # one before the clock starts, one before it stops
    # 10 calls of 15 us (the last kernel is done before the last call returns), then the closing sync's 1 us.
    assert value == pytest.approx((150.0 + 1.0) / 10)


@pytest.mark.parametrize(
    ("host_us", "feed_us"), [(0.0, 20.0), (100.0, 145.0), (1e9, 20_000.0), (math.nan, 20_000.0)]
)
def test_the_busy_wait_outlasts_the_host_time_within_bounds(host_us: float, feed_us: float) -> None:
    from evaluators.timing.wall import feed_for

    assert feed_for(host_us) == feed_us
