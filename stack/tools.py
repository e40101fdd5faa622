"""Go programs the stack runs that Debian does not package, built from their Go modules once and cached.

    python -m stack.tools build [prometheus|thanos|promtool|all]     (default: all)
    python -m stack.tools status

Prometheus 3 (its ``promtool`` and ``prometheus`` commands) and Thanos, each built with the machine's
``go`` into a cache folder outside the repository, so that every later test run, native stack and CI job
on the machine reuses it. The rule tests run on this promtool beside Debian's; the native stack runs this
prometheus when it is built, and Thanos with ``STACK_STORE=thanos``.

Environment:
  INNODB_STACK_TOOLS    the cache folder (default /var/cache/innodb-stack/tools)
  GOMODCACHE, GOCACHE, GOPROXY, GOTOOLCHAIN
                        as the go command reads them (a fresh GOMODCACHE and GOCACHE build from nothing)

Building needs Go (the version each module's go.mod asks for, or later) and the Go module proxy; from
nothing it takes minutes (all three about 8 alone on 2 cores, more beside the tests: README.md), with a line
of progress every 20 s. Two processes never build the same tool at once (a lock file), and a tool counts
as built only once its marker is written: an interrupted build is started again from nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from .build_once import build_once, say

DEFAULT_CACHE = "/var/cache/innodb-stack/tools"
MARKER = ".innodb-stack-tool.json"
# Raise when the build steps change: tools built by earlier steps are then built again.
REVISION = 1
PROGRESS_EVERY_S = 20
# Where a Go program keeps the version --version prints (Prometheus' and Thanos' builds set it by -ldflags).
VERSION_PACKAGE = "github.com/prometheus/common/version"


@dataclass(frozen=True)
class Tool:
    name: str  # the command, and its folder in the cache
    module: str  # the Go module that holds it
    module_version: str
    package: str  # the main package, in that module
    version: str  # what `NAME --version` says
    # Thanos' go.mod replaces some of its dependencies, which `go install module@version` refuses: it is built
    # in a module of our own that requires it and repeats those replace lines.
    own_module: bool = False
    tags: tuple[str, ...] = ()  # build tags

    def describe(self) -> str:
        return f"{self.package}@{self.module_version}"


# Prometheus 3.16 is published as the Go module v0.316.0 (its tag v3.16.0 on the same commit). Thanos v0.42.4
# is the newest release whose go.mod asks for a Go this machine has (1.26.0; v0.42.5 asks for 1.26.10). Thanos
# is built with the tags of its own release builds (.promu.yml): slicelabels above all, which keeps
# Prometheus' labels a slice, as Thanos' gRPC code reads them (without it a sidecar panics on the first call
# of Thanos Query, sizing a message from labels it misreads).
# Prometheus is built with its remove_all_sd tag (plugins/), which keeps the service discovery it always has
# (static, file and HTTP) and leaves out the others (the clouds, Consul, Kubernetes and the rest; promtool keeps
# Kubernetes', which it imports itself): the stack's targets are static and file. From nothing, promtool then
# downloads 135 modules and compiles 1,115 packages, against 199 and 1,362 without the tag.
PROMETHEUS = ("github.com/prometheus/prometheus", "v0.316.0", "3.16.0")
PROMETHEUS_TAGS = ("remove_all_sd",)
# In the order `build` builds them, the order in which the tests need them most (tests/integration/conftest.py):
# Prometheus 3 and Thanos for the stressed stacks, the longest unit of the tests' shared lane, which waits for
# them; then promtool, which a rule test builds itself if it comes to need it first.
TOOLS = {
    "prometheus": Tool("prometheus", PROMETHEUS[0], PROMETHEUS[1], f"{PROMETHEUS[0]}/cmd/prometheus", PROMETHEUS[2],
                       tags=PROMETHEUS_TAGS),
    "thanos": Tool("thanos", "github.com/thanos-io/thanos", "v0.42.4", "github.com/thanos-io/thanos/cmd/thanos",
                   "0.42.4", own_module=True, tags=("netgo", "slicelabels")),
    "promtool": Tool("promtool", PROMETHEUS[0], PROMETHEUS[1], f"{PROMETHEUS[0]}/cmd/promtool", PROMETHEUS[2],
                     tags=PROMETHEUS_TAGS),
}


class ToolError(RuntimeError):
    """A tool cannot be built or found; the message says what to do."""


def cache_dir() -> str:
    return os.environ.get("INNODB_STACK_TOOLS") or DEFAULT_CACHE


def tool_dir(name: str) -> str:
    return os.path.join(cache_dir(), name)


def binary_path(name: str) -> str:
    return os.path.join(tool_dir(name), "bin", name)


def _say(message: str) -> None:
    say("stack.tools", message)


def built(name: str) -> dict | None:
    """The marker of a complete build from today's recipe, else None."""
    try:
        with open(os.path.join(tool_dir(name), MARKER)) as f:
            marker = json.load(f)
    except (OSError, ValueError):
        return None
    tool = TOOLS[name]
    current = (marker.get("revision"), marker.get("package"), marker.get("module_version"), marker.get("tags", []))
    wanted = (REVISION, tool.package, tool.module_version, list(tool.tags))
    if current != wanted or not os.access(binary_path(name), os.X_OK):
        return None
    return marker


def path_if_built(name: str) -> str | None:
    return binary_path(name) if built(name) else None


def ensure(name: str) -> str:
    """The tool's binary, built first when it is not (yet). Safe to call from many processes."""
    if name not in TOOLS:
        raise ToolError(f"no tool named {name!r}; known: {', '.join(TOOLS)}")
    if not built(name):
        go = _go()
        build_once(cache_dir(), name, lambda: built(name), lambda: _build(TOOLS[name], go),
                   lambda: _say(f"another process is building {name}; waiting for it"))
    return binary_path(name)


# Go 1.21 and later fetch the Go a module asks for (GOTOOLCHAIN=auto) from the module proxy; an older Go (Debian
# bookworm's golang-go is 1.19) cannot build these modules at all.
OLDEST_GO = (1, 21)


def _go() -> str:
    go = shutil.which("go") or next((p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if os.access(p, os.X_OK)),
                                    None)
    if not go:
        raise ToolError("go is not installed: Prometheus 3 and Thanos are built from their Go modules (install Go "
                        "1.26 or later)")
    version = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, env=_environment()).stdout.strip()
    found = re.match(r"go(\d+)\.(\d+)", version)
    if not found or tuple(map(int, found.groups())) < OLDEST_GO:
        raise ToolError(f"{go} is {version or 'a Go that does not say its version'}: Prometheus 3 and Thanos need Go "
                        "1.26 or later (or Go 1.21 or later, which fetches the Go their modules ask for from the module "
                        "proxy); install it and put it first on PATH")
    return go


def ldflags(tool: Tool, user: str, date: str) -> str:
    """-X settings of github.com/prometheus/common/version: without them --version prints no version. The
    revision is the Go module version the source came from (a module download carries no commit)."""
    values = {"Version": tool.version, "Revision": f"{tool.module}@{tool.module_version}",
              "Branch": f"v{tool.version}", "BuildUser": user, "BuildDate": date}
    return " ".join(f"-X {VERSION_PACKAGE}.{key}={value}" for key, value in values.items())


def _environment() -> dict[str, str]:
    # Static binaries, like the projects' own releases; the version comes from -ldflags, not from a VCS stamp.
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-buildvcs=false")
    env.setdefault("GOTOOLCHAIN", "local")  # no toolchain download unless asked for
    return env


class _Progress:
    """Reads go's output into the build log, counting modules downloaded and packages compiled (go -v names
    each), and says where the build is every PROGRESS_EVERY_S seconds."""

    def __init__(self, name: str, log):
        self.name, self.log = name, log
        self.modules = self.packages = 0
        self.done = threading.Event()

    def read(self, stream) -> None:
        for line in stream:
            self.log.write(line)
            if line.startswith("go: downloading "):
                self.modules += 1
            elif re.fullmatch(r"[\w./~-]+\n", line):  # a package go -v compiled
                self.packages += 1
        self.log.flush()

    def report(self, started: float) -> None:
        while not self.done.wait(PROGRESS_EVERY_S):
            _say(f"{self.name}: {time.monotonic() - started:.0f} s, {self.modules} modules downloaded, "
                 f"{self.packages} packages compiled")


def _run(argv: list[str], log, what: str, progress: _Progress | None = None, cwd: str | None = None,
         extra_env: dict[str, str] | None = None) -> str:
    """Run a go command into the build log; with ``progress`` its output is counted as it comes, without it
    its standard output is returned (its standard error goes to the log)."""
    log.write(f"\n$ {' '.join(argv)}\n")
    log.flush()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT if progress else log,
                            stdin=subprocess.DEVNULL, text=True, env={**_environment(), **(extra_env or {})}, cwd=cwd)
    output = ""
    if progress:
        progress.read(proc.stdout)
    else:
        output = proc.stdout.read()
    if proc.wait() != 0:
        log.write(output)
        log.flush()
        with open(log.name, encoding="utf-8", errors="replace") as f:
            tail = f.read()[-3000:]
        raise ToolError(f"{what} failed (exit {proc.returncode}); full log {log.name}:\n{tail}")
    return output


def _own_module(tool: Tool, go: str, directory: str, log) -> None:
    """A module that requires ``tool.module`` and repeats its go.mod's replace lines, read with go mod edit."""
    found = json.loads(_run([go, "mod", "download", "-json", f"{tool.module}@{tool.module_version}"], log,
                            f"downloading {tool.module}@{tool.module_version}"))
    theirs = json.loads(_run([go, "mod", "edit", "-json", found["GoMod"]], log, f"reading {tool.module}'s go.mod"))
    os.makedirs(directory)
    with open(os.path.join(directory, "go.mod"), "w") as f:
        f.write(f"module innodb-stack/tools/{tool.name}\n\ngo {theirs['Go']}\n")
    edits = [f"-require={tool.module}@{tool.module_version}"]
    for replace in theirs.get("Replace") or []:
        old, new = replace["Old"], replace["New"]
        if not new.get("Version"):  # a directory inside their repository: not in the module download
            raise ToolError(f"{tool.module}@{tool.module_version} replaces {old['Path']} by the directory "
                            f"{new['Path']}, which a module of ours cannot repeat")
        left = old["Path"] + (f"@{old['Version']}" if old.get("Version") else "")
        edits.append(f"-replace={left}={new['Path']}@{new['Version']}")
    _run([go, "mod", "edit", *edits], log, "writing our module's go.mod", cwd=directory)
    _say(f"{tool.name}: our module requires {tool.module}@{tool.module_version} with its {len(edits) - 1} "
         "replace lines")


def _build(tool: Tool, go: str) -> None:
    final = tool_dir(tool.name)
    work = final + ".building"
    started = time.monotonic()
    shutil.rmtree(work, ignore_errors=True)  # what an interrupted build left
    os.makedirs(os.path.join(work, "bin"))
    go_version = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, env=_environment()).stdout.strip()
    log_path = os.path.join(cache_dir(), f"{tool.name}.log")
    _say(f"building {tool.name} {tool.version} ({tool.describe()}) with {go_version} in {final}; minutes from "
         f"nothing (log: {log_path})")
    user = f"innodb-stack@{os.uname().nodename}"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H:%M:%S")
    flags = ["-v", "-trimpath", "-ldflags", ldflags(tool, user, date), *(["-tags", ",".join(tool.tags)] * bool(tool.tags))]
    with open(log_path, "w") as log:
        progress = _Progress(tool.name, log)
        reporter = threading.Thread(target=progress.report, args=(started,), daemon=True)
        reporter.start()
        try:
            if tool.own_module:
                with tempfile.TemporaryDirectory(prefix=f"{tool.name}-module-") as scratch:
                    module = os.path.join(scratch, "module")
                    _own_module(tool, go, module, log)
                    _run([go, "get", f"{tool.package}@{tool.module_version}"], log,
                         f"resolving {tool.describe()} in our module", progress, cwd=module)
                    _run([go, "build", *flags, "-o", os.path.join(work, "bin", tool.name), tool.package], log,
                         f"go build {tool.package}", progress, cwd=module)
            else:  # go install writes the command into GOBIN
                _run([go, "install", *flags, f"{tool.package}@{tool.module_version}"], log,
                     f"go install {tool.describe()}", progress, extra_env={"GOBIN": os.path.join(work, "bin")})
        finally:
            progress.done.set()
    answer = subprocess.run([os.path.join(work, "bin", tool.name), "--version"], capture_output=True, text=True)
    printed = answer.stdout or answer.stderr  # Thanos prints its version on standard error
    if tool.version not in printed.split("\n")[0]:
        raise ToolError(f"the {tool.name} built says {printed.splitlines()[:1]}, not version {tool.version}; "
                        f"log: {log_path}")
    with open(os.path.join(work, MARKER), "w") as f:
        json.dump({"name": tool.name, "revision": REVISION, "package": tool.package,
                   "module_version": tool.module_version, "tags": list(tool.tags), "version": tool.version,
                   "go": go_version,
                   "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "seconds": round(time.monotonic() - started), "modules_downloaded": progress.modules,
                   "packages_compiled": progress.packages}, f, indent=1, sort_keys=True)
        f.write("\n")
    shutil.rmtree(final, ignore_errors=True)  # an outdated or incomplete one
    os.rename(work, final)
    _say(f"built {tool.name} {tool.version}: {os.path.getsize(binary_path(tool.name)) / 1e6:.0f} MB, "
         f"{time.monotonic() - started:.0f} s ({progress.modules} modules downloaded, {progress.packages} "
         "packages compiled)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m stack.tools", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the tools that are not built yet")
    build.add_argument("name", nargs="?", default="all", choices=[*TOOLS, "all"])
    sub.add_parser("status", help="which tools are built, where, from which module version")
    args = p.parse_args(argv)
    names = list(TOOLS) if getattr(args, "name", "all") == "all" else [args.name]
    try:
        for name in names:
            if args.command == "build":
                ensure(name)
            marker = built(name)
            state = (f"{marker['version']} ({TOOLS[name].describe()}, {marker['go']}), built {marker['built']} in "
                     f"{marker['seconds']} s" if marker else "not built")
            print(f"{name:11} {binary_path(name)}: {state}")
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
