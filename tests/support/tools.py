"""The programs stack/tools.py builds (Prometheus 3, Thanos), for the tests that run them."""

from __future__ import annotations

import pytest

from stack import tools


def built_tool(request, name: str) -> str:
    """The tool's binary, built now when it is not yet (minutes, once per machine; .ci/run builds them first),
    its progress shown on the terminal rather than captured."""
    if not tools.built(name):
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            try:
                return tools.ensure(name)
            except tools.ToolError as exc:
                pytest.fail(str(exc))
    return tools.binary_path(name)
