"""A cached build that many processes ask for at once runs once (stack/build_once.py)."""

from __future__ import annotations

import os
import threading

from stack.build_once import build_once


def test_a_second_caller_waits_for_the_first_build_and_does_not_build_again(tmp_path):
    marker = tmp_path / "done"
    builds, waited = [], threading.Event()
    first_building, release = threading.Event(), threading.Event()

    def build():
        builds.append(threading.current_thread().name)
        first_building.set()
        assert release.wait(30)
        marker.write_text("built")

    first = threading.Thread(target=build_once, name="first",
                             args=(str(tmp_path), "tool", marker.exists, build, lambda: None))
    first.start()
    assert first_building.wait(30)
    second = threading.Thread(target=build_once, name="second",
                              args=(str(tmp_path), "tool", marker.exists, build, waited.set))
    second.start()
    assert waited.wait(30)  # it found the lock held, and says it waits
    release.set()
    first.join(30)
    second.join(30)
    assert builds == ["first"] and marker.read_text() == "built"


def test_nothing_is_locked_or_built_when_it_is_built_already(tmp_path):
    cache = tmp_path / "cache"
    build_once(str(cache), "tool", lambda: True, lambda: 1 / 0, lambda: 1 / 0)
    assert not os.path.exists(cache)
