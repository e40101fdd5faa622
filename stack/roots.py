"""Debian roots holding the database servers of other Debian suites, built once and cached.

    python -m stack.roots build [mariadb-11.8|mysql-9|all]     (default: all)
    python -m stack.roots status

A root is ``debootstrap --variant=minbase <suite>`` plus the server's package, in a cache folder outside
the repository, so that every later test run, native stack and CI job on the machine reuses it. A server
runs inside its root with ``chroot``, its own directory mounted in (see ``command``); the tests, the
exporter and sysbench stay on the host.

Environment:
  INNODB_STACK_ROOTS    the cache folder (default /var/cache/innodb-stack/roots)
  INNODB_STACK_MIRROR   the Debian mirror (default: the one apt uses on this machine, else deb.debian.org)

Building and running need root (debootstrap, mount, chroot); building needs the debootstrap package and
the mirror, and takes about a minute per root. Two processes never build the same root at once (a lock
file), and a root counts as built only once its marker is written: an interrupted build is started again
from nothing.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

from .build_once import build_once, say

DEFAULT_CACHE = "/var/cache/innodb-stack/roots"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
MARKER = ".innodb-stack-root.json"
# Raise when the build steps change: roots built by earlier steps are then built again.
REVISION = 1
# Inside every root: where a server's own directory (data, socket, logs) is mounted while it runs.
SERVER_DIR = "/srv/innodb-server"


@dataclass(frozen=True)
class Recipe:
    name: str  # the flavour it serves, e.g. "mysql-9"
    suite: str
    packages: tuple[str, ...]
    server_package: str  # whose version names the server
    version_prefix: str  # the upstream version the flavour's name promises

    def describe(self) -> str:
        return f"Debian {self.suite}, {' '.join(self.packages)}"


# The server's -core package holds the server binary and its files; the meta packages add clients, perl
# and systemd units that a test server never uses (measured: 100 MB more for MySQL, 340 MB for MariaDB).
# mariadb-install-db needs my_print_defaults from mariadb-client-core.
RECIPES = {
    "mariadb-11.8": Recipe("mariadb-11.8", "trixie", ("mariadb-server-core", "mariadb-client-core"),
                           "mariadb-server-core", "11.8."),
    "mysql-9": Recipe("mysql-9", "sid", ("mysql-server-core",), "mysql-server-core", "9."),
}


class RootError(RuntimeError):
    """A root cannot be built or used; the message says what to do."""


def cache_dir() -> str:
    return os.environ.get("INNODB_STACK_ROOTS") or DEFAULT_CACHE


def root_path(name: str) -> str:
    return os.path.join(cache_dir(), name)


def _say(message: str) -> None:
    say("stack.roots", message)


def mirror() -> str:
    """INNODB_STACK_MIRROR, else the first Debian archive apt uses here (not the security one)."""
    configured = os.environ.get("INNODB_STACK_MIRROR")
    if configured:
        return configured.rstrip("/")
    files = ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*"))]
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        # "deb http://deb.debian.org/debian bookworm main" or "URIs: http://deb.debian.org/debian"
        for uri in re.findall(r"^\s*(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s*)(\S+)", text, re.MULTILINE):
            if re.search(r"/debian/?$", uri):
                return uri.rstrip("/")
    return DEFAULT_MIRROR


def built(name: str) -> dict | None:
    """The marker of a complete root built from today's recipe, else None."""
    try:
        with open(os.path.join(root_path(name), MARKER)) as f:
            marker = json.load(f)
    except (OSError, ValueError):
        return None
    recipe = RECIPES[name]
    current = (marker.get("revision"), marker.get("suite"), marker.get("packages"))
    return marker if current == (REVISION, recipe.suite, list(recipe.packages)) else None


def ensure(name: str) -> str:
    """The root for ``name``, built first when it is not (yet) complete. Safe to call from many processes."""
    if name not in RECIPES:
        raise RootError(f"no root named {name!r}; known: {', '.join(RECIPES)}")
    if not built(name):
        _check_can_build()
        build_once(cache_dir(), name, lambda: built(name), lambda: _build(RECIPES[name]),
                   lambda: _say(f"another process is building the {name} root; waiting for it"))
    return root_path(name)


def _check_can_build() -> None:
    if os.geteuid() != 0:
        raise RootError("the servers in Debian roots need root, to build the root (debootstrap, mount) and to "
                        "run in it (chroot); run as root")
    missing = [tool for tool in ("debootstrap", "unshare", "chroot", "mount") if not _which(tool)]
    if missing:
        raise RootError(f"{', '.join(missing)} not installed: apt-get install debootstrap "
                        "(stack/install-packages.sh installs it)")


def _which(tool: str) -> str | None:
    return shutil.which(tool) or next((p for p in (f"/usr/sbin/{tool}", f"/sbin/{tool}") if os.access(p, os.X_OK)),
                                      None)


def _check_mirror(url: str, suite: str) -> None:
    release = f"{url}/dists/{suite}/Release"
    try:
        with urllib.request.urlopen(release, timeout=30) as response:
            response.read(1)
    except OSError as exc:
        raise RootError(f"Debian mirror unreachable: {release}: {exc}; set INNODB_STACK_MIRROR to one that "
                        "this machine reaches") from exc


def _mounts_under(path: str) -> list[str]:
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].replace("\\040", " ") for line in f]
    return [p for p in points if p == path or p.startswith(path + "/")]


def _remove(path: str) -> None:
    """Remove a root; never one with something mounted in it (rm -rf would reach into the mount)."""
    if not os.path.lexists(path):
        return
    mounted = _mounts_under(path)
    if mounted:
        raise RootError(f"cannot remove {path}: mounted inside it: {', '.join(mounted)}; unmount them first")
    shutil.rmtree(path)


def command(root: str, argv: list[str], binds: dict[str, str] | None = None) -> list[str]:
    """argv that runs ``argv`` inside ``root``, with /proc and ``binds`` (host path -> path in the root)
    mounted in a mount namespace of its own: the mounts vanish with the process, however it ends, and
    two servers of one root each see their own directory. The process keeps the pid of the first one
    (unshare, sh and chroot each exec the next), so signals reach the server itself."""
    script = ["set -e", f"mount -t proc proc {shlex.quote(os.path.join(root, 'proc'))}"]
    for host, inside in (binds or {}).items():
        target = os.path.join(root, inside.lstrip("/"))
        script.append(f"mkdir -p {shlex.quote(target)}")
        script.append(f"mount --bind {shlex.quote(host)} {shlex.quote(target)}")
    script.append(f'exec chroot {shlex.quote(root)} "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "; ".join(script), "sh", *argv]


def _run(argv: list[str], log, what: str) -> None:
    log.write(f"\n$ {shlex.join(argv)}\n")
    log.flush()
    result = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C"))
    if result.returncode != 0:
        log.flush()
        with open(log.name, encoding="utf-8", errors="replace") as f:
            tail = f.read()[-3000:]
        raise RootError(f"{what} failed (exit {result.returncode}); full log {log.name}:\n{tail}")


def _write(path: str, text: str, mode: int = 0o644) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def _build(recipe: Recipe) -> None:
    url = mirror()
    final = root_path(recipe.name)
    work = final + ".building"
    started = time.monotonic()
    _say(f"building the {recipe.name} root ({recipe.describe()}) in {final} from {url}; about a minute")
    _check_mirror(url, recipe.suite)
    _remove(work)  # what an interrupted build left
    log_path = os.path.join(cache_dir(), f"{recipe.name}.log")
    with open(log_path, "w") as log:
        _say(f"debootstrap --variant=minbase {recipe.suite} (log: {log_path})")
        # In a mount namespace of its own: the /proc and /sys debootstrap mounts cannot outlive it.
        _run(["unshare", "--mount", "--propagation", "private", _which("debootstrap"), "--variant=minbase",
              recipe.suite, work, url], log, f"debootstrap {recipe.suite} from {url}")
        # Package scripts must not start services in the root; an unstable suite's Release file may be
        # older than its Valid-Until by this machine's clock; docs and manuals are not needed.
        _write(os.path.join(work, "usr/sbin/policy-rc.d"), "#!/bin/sh\nexit 101\n", 0o755)
        _write(os.path.join(work, "etc/apt/apt.conf.d/99innodb-stack"),
               'Acquire::Check-Valid-Until "false";\nAPT::Install-Recommends "false";\n')
        _write(os.path.join(work, "etc/dpkg/dpkg.cfg.d/01-innodb-stack-nodoc"),
               "".join(f"path-exclude=/usr/share/{folder}/*\n" for folder in ("doc", "man", "info", "locale")))
        # mariadb-install-db resolves localhost; mysqld's default --secure-file-priv must exist.
        _write(os.path.join(work, "etc/hosts"), "127.0.0.1\tlocalhost\n::1\tlocalhost\n")
        os.makedirs(os.path.join(work, "var/lib/mysql-files"), mode=0o750, exist_ok=True)
        os.makedirs(os.path.join(work, SERVER_DIR.lstrip("/")), exist_ok=True)
        _say(f"apt-get install {' '.join(recipe.packages)}")
        _run(command(work, ["apt-get", "update", "-q"]), log, "apt-get update in the root")
        _run(command(work, ["apt-get", "install", "-y", "-q", *recipe.packages]), log,
             f"apt-get install {' '.join(recipe.packages)} in the root")
        _run(command(work, ["apt-get", "clean"]), log, "apt-get clean in the root")
    for leftover in glob.glob(os.path.join(work, "var/lib/apt/lists/*")):
        if os.path.isfile(leftover):
            os.remove(leftover)
    versions = installed_versions(work)
    version = versions.get(recipe.server_package, "")
    upstream = version.split(":")[-1]
    if not upstream.startswith(recipe.version_prefix):
        raise RootError(f"Debian {recipe.suite} now carries {recipe.server_package} {version or '(none)'}, not "
                        f"{recipe.version_prefix}x as {recipe.name} promises: update RECIPES in stack/roots.py")
    _write(os.path.join(work, MARKER), json.dumps({
        "name": recipe.name, "revision": REVISION, "suite": recipe.suite, "packages": list(recipe.packages),
        "mirror": url,
        "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started), "versions": versions}, indent=1, sort_keys=True) + "\n")
    _remove(final)  # an outdated or incomplete one
    os.rename(work, final)
    _say(f"built the {recipe.name} root: {recipe.server_package} {version}, {_size_mb(final)} MB, "
         f"{time.monotonic() - started:.0f} s")


def installed_versions(root: str) -> dict[str, str]:
    """Every installed package's version, from the root's dpkg database."""
    versions, package = {}, None
    with open(os.path.join(root, "var/lib/dpkg/status"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("Package: "):
                package = line.split(":", 1)[1].strip()
            elif line.startswith("Version: ") and package:
                versions[package] = line.split(":", 1)[1].strip()
    return versions


def _size_mb(path: str) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return round(total / 1e6)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m stack.roots", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the roots that are not built yet")
    build.add_argument("name", nargs="?", default="all", choices=[*RECIPES, "all"])
    sub.add_parser("status", help="which roots are built, where, with which server version")
    args = p.parse_args(argv)
    names = list(RECIPES) if getattr(args, "name", "all") == "all" else [args.name]
    try:
        for name in names:
            if args.command == "build":
                ensure(name)
            marker = built(name)
            recipe = RECIPES[name]
            state = (f"{recipe.server_package} {marker['versions'].get(recipe.server_package)}, built {marker['built']}"
                     if marker else "not built")
            print(f"{name:14} {root_path(name)}: {state}")
    except RootError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
