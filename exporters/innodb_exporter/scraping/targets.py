"""Every server the exporter scrapes (the default one and those ``/probe`` asks for), within bounds.

A server is one target per (canonical address, user, credentials section), so every spelling of an
address shares one connection. The bounds hold whatever callers ask: at most ``max_connections``
targets in all and ``max_connections_per_server`` per address; a new target evicts the least recently
scraped one that is not scraping, or is refused. A janitor closes connections nothing scraped for
``idle_timeout`` and forgets probed targets idle for twice that.

``all()`` reads a copy replaced whole whenever a target comes or goes, without the lock: whatever asks
for the list (the capture webhook, however many arrive) never waits on a probe that makes room.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from .connection import ConnectionSettings
from .target import ScrapeOptions, Target

log = logging.getLogger("innodb_exporter")


@dataclass(frozen=True)
class ProbeLimits:
    max_connections: int = 256  # open connections to servers, all targets together
    max_connections_per_server: int = 2  # per server address, whatever the credentials
    idle_timeout: float = 300.0  # a target's connection is closed after this long without a scrape


class TooManyTargets(Exception):
    """Every target within the bounds is scraping now; the caller should retry later."""


def _key(settings: ConnectionSettings, auth_module: str | None) -> tuple:
    return settings.address, settings.user, auth_module or "client"


class Targets:
    def __init__(self, default: ConnectionSettings | None, options: ScrapeOptions,
                 limits: ProbeLimits = ProbeLimits()):
        """``default``: the server of /metrics (None when none is configured)."""
        self.options = options
        self.limits = limits
        self.default = Target(default, options) if default else None
        self._default_key = _key(default, None) if default else None
        self._probed: OrderedDict[tuple, Target] = OrderedDict()  # least recently used first
        self._all: tuple[Target, ...] = (self.default,) if self.default else ()  # what all() reads
        self._mu = threading.Lock()
        self._stop = threading.Event()
        self._janitor: threading.Thread | None = None

    def for_probe(self, settings: ConnectionSettings, auth_module: str | None = None) -> Target:
        key = _key(settings, auth_module)
        if key == self._default_key:
            return self.default  # the same server and credentials as /metrics: the same connection
        with self._mu:
            target = self._probed.pop(key, None)
            if target is None:
                self._make_room(settings.address)
                target = Target(settings, self.options)
                self._probed[key] = target
                self._publish()
            else:
                self._probed[key] = target  # now the most recently used
        return target

    def _publish(self) -> None:
        """Replace all()'s copy (under the lock, after the targets changed)."""
        self._all = ((self.default,) if self.default else ()) + tuple(self._probed.values())

    def _make_room(self, address: str) -> None:
        """Evict least recently used idle targets until a new one for ``address`` fits; else refuse."""
        same_server = [k for k in self._probed if k[0] == address]
        in_default = 1 if self._default_key and self._default_key[0] == address else 0
        if len(same_server) + in_default >= self.limits.max_connections_per_server:
            if not self._evict(same_server):
                raise TooManyTargets(f"{address} already has {self.limits.max_connections_per_server} connections "
                                     "scraping (--probe.max-connections-per-server)")
        if len(self._probed) + (self.default is not None) >= self.limits.max_connections:
            if not self._evict(list(self._probed)):
                raise TooManyTargets(f"{self.limits.max_connections} connections are scraping "
                                     "(--probe.max-connections)")

    def _evict(self, keys: list[tuple]) -> bool:
        for key in keys:  # oldest first
            target = self._probed[key]
            if not target.flight.busy:
                del self._probed[key]
                self._publish()
                target.close()
                return True
        return False

    def all(self) -> list[Target]:
        """Every target: the default one first, then the probed ones. Takes no lock."""
        return list(self._all)

    # --- the janitor ----------------------------------------------------------------------------

    def start_janitor(self, interval: float = 30.0) -> None:
        self._janitor = threading.Thread(target=self._sweep_forever, args=(interval,), daemon=True, name="janitor")
        self._janitor.start()

    def sweep(self) -> None:
        idle = self.limits.idle_timeout
        for target in self.all():
            if target.close_if_idle(idle):
                log.debug("closed the idle connection to %s", target.settings.address)
        with self._mu:
            forgotten = [k for k, t in self._probed.items()
                         if not t.session.is_open and time.monotonic() - t.session.last_used > 2 * idle]
            for key in forgotten:
                del self._probed[key]
            if forgotten:
                self._publish()

    def _sweep_forever(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.sweep()

    def close(self) -> None:
        """Stop the janitor and close every connection (shutdown)."""
        self._stop.set()
        for target in self.all():
            target.close()
