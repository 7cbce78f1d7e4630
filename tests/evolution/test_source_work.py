"""Source work runs off the event loop one call at a time (evolution/source_work.py): concurrent mutators
never parse in two threads at once, which CPython 3.11's parser does not survive."""

from __future__ import annotations

import asyncio
import threading
import time

from evolution.source_work import in_source_thread


def test_calls_run_in_worker_threads_one_at_a_time() -> None:
    running, most, threads = 0, 0, set()
    guard = threading.Lock()

    def work(k: int) -> int:
        nonlocal running, most
        with guard:
            running += 1
            most = max(most, running)
            threads.add(threading.get_ident())
        time.sleep(0.02)
        with guard:
            running -= 1
        return k * k

    async def many() -> list[int]:
        return await asyncio.gather(*(in_source_thread(work, k) for k in range(6)))

    assert asyncio.run(many()) == [0, 1, 4, 9, 16, 25]
    assert most == 1
    assert threading.get_ident() not in threads  # never on the loop's own thread


def test_the_loop_stays_free_while_one_runs() -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        for _ in range(5):
            await asyncio.sleep(0.005)
            ticks += 1

    async def both() -> None:
        await asyncio.gather(in_source_thread(time.sleep, 0.1), tick())

    asyncio.run(both())
    assert ticks == 5
