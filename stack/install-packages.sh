#!/usr/bin/env bash
# Install the Debian packages the stack and its tests run on, those that are missing.
# Used by .ci/run and by `./innodb-stack up` on a machine without Docker.
set -euo pipefail

PACKAGES=(
  make python3 python3-venv python3-pip ca-certificates curl
  mariadb-server mariadb-client sysbench
  debootstrap  # the Debian roots of the other servers the tests run (stack/roots.py)
  prometheus prometheus-alertmanager prometheus-mysqld-exporter prometheus-node-exporter
  victoria-metrics  # the store behind remote_write (STACK_STORE=victoriametrics; tests/integration/test_remote_store.py)
  docker-compose
)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# The server packages start their services when installed; the stack starts its own, on its own
# ports, so keep the packaged ones from starting.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
