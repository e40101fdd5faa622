"""Single flight: concurrent callers of one job share one run, and each waits only until its own deadline.

The run goes on in a worker thread after a caller gives up, so the job is never started twice at once:
for a scrape, the server sees one set of queries at a time however many requests arrive.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Callable, Generic, TypeVar

T = TypeVar("T")
# The threads scrapes run in, shared by every target and reused (a thread per scrape cost more than the
# parse). Bounded far above what a fleet needs at once: a hung server holds one until its query times out.
_WORKERS = ThreadPoolExecutor(max_workers=512, thread_name_prefix="scrape")


class TimedOut(Exception):
    """The caller's deadline passed before the shared run finished."""


class SingleFlight(Generic[T]):
    def __init__(self, name: str):
        self.name = name
        self._mu = threading.Lock()
        self._inflight: Future | None = None

    def run(self, job: Callable[[float], T], deadline: float) -> T:
        """``job(deadline)`` in a worker, or the run already in flight; raises TimedOut at ``deadline``."""
        with self._mu:
            future = self._inflight
            if future is None:
                future = self._inflight = Future()
                _WORKERS.submit(self._lead, job, future, deadline)
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            raise TimedOut() from None

    @property
    def busy(self) -> bool:
        return self._inflight is not None

    def _lead(self, job, future: Future, deadline: float) -> None:
        try:
            result = job(deadline)
        except BaseException as exc:  # handed to every waiter, never lost in the worker
            with self._mu:
                self._inflight = None
            future.set_exception(exc)
            return
        with self._mu:
            self._inflight = None
        future.set_result(result)
