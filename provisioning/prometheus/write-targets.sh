#!/bin/sh
# Write Prometheus' file-based service discovery targets for one MySQL server and the stack around
# it, then optionally run a command (the compose service runs Prometheus after it).
#
#   write-targets.sh DIR [-- command ...]
#
# Addresses come from the environment; the defaults are docker-compose.yml's service names.
#   MYSQL_ADDRESS      the MySQL/MariaDB server, as host:port (it is also the `instance` label)
#   INNODB_EXPORTER    our exporter (scraped at /probe?target=MYSQL_ADDRESS)
#   MYSQLD_EXPORTER    mysqld_exporter for that server
#   NODE_EXPORTER      node_exporter on the server's host
#   REDO_DEVICE        the block device that holds the server's data directory, as node_exporter names
#                      it (e.g. nvme0n1, dm-0); labels the node target `redo_device` so that the REDO
#                      panels show the host's flush and write times for it. Empty: every disk is shown.
#   PROMETHEUS, ALERTMANAGER
#   STACK_STORE        victoriametrics: Prometheus also ships every sample with remote_write to
#                      VICTORIAMETRICS (its /api/v1/write), where vmalert evaluates the same rules. The
#                      script writes PROMETHEUS_CONFIG with that remote_write section added, as
#                      prometheus-remote-write.yml beside it, and the command runs that file instead.
#                      Empty (the default): no remote_write.
#   VICTORIAMETRICS    the VictoriaMetrics single node, as host:port
#   PROMETHEUS_CONFIG  the prometheus.yml the command runs (default /etc/prometheus/prometheus.yml)
set -eu
dir=$1
shift
: "${MYSQL_ADDRESS:=mysql:3306}"
: "${INNODB_EXPORTER:=innodb-exporter:9207}"
: "${MYSQLD_EXPORTER:=mysqld-exporter:9104}"
: "${NODE_EXPORTER:=node-exporter:9100}"
: "${PROMETHEUS:=localhost:9090}"
: "${ALERTMANAGER:=alertmanager:9093}"
: "${REDO_DEVICE:=}"
: "${STACK_STORE:=}"
: "${VICTORIAMETRICS:=victoriametrics:8428}"
: "${PROMETHEUS_CONFIG:=/etc/prometheus/prometheus.yml}"
case $STACK_STORE in
  "" | victoriametrics) ;;
  *) echo "write-targets.sh: STACK_STORE=$STACK_STORE: victoriametrics, or empty for none" >&2; exit 2 ;;
esac

mkdir -p "$dir"
write() {  # atomically, so that Prometheus never reads half a file
  printf '%s\n' "$2" > "$dir/$1.tmp"
  mv "$dir/$1.tmp" "$dir/$1"
}
write mysql.yml "- targets: ['$MYSQL_ADDRESS']
  labels: {__innodb_exporter: '$INNODB_EXPORTER'}"
write mysqld-exporter.yml "- targets: ['$MYSQLD_EXPORTER']
  labels: {instance: '$MYSQL_ADDRESS'}"
write node.yml "- targets: ['$NODE_EXPORTER']
  labels: {instance: '$MYSQL_ADDRESS', redo_device: '$REDO_DEVICE'}"
write prometheus.yml "- targets: ['$PROMETHEUS']"
write alertmanager.yml "- targets: ['$ALERTMANAGER']"

# The store's ruler records and alerts from the raw samples: Prometheus' own recorded series and
# ALERTS stay local, so that the store holds each series once.
remote_write_config=${PROMETHEUS_CONFIG%.yml}-remote-write.yml
if [ "$STACK_STORE" = victoriametrics ]; then
  { cat "$PROMETHEUS_CONFIG"; printf '%s\n' "
# Written by write-targets.sh for STACK_STORE=$STACK_STORE.
remote_write:
  - url: http://$VICTORIAMETRICS/api/v1/write
    write_relabel_configs:
      - source_labels: [__name__]
        regex: 'ALERTS|ALERTS_FOR_STATE|.+:.+'
        action: drop"; } > "$remote_write_config.tmp"
  mv "$remote_write_config.tmp" "$remote_write_config"
fi

if [ "${1:-}" = "--" ]; then
  shift
  if [ -n "$STACK_STORE" ]; then  # the same command, on the configuration with remote_write
    for arg; do
      shift
      [ "$arg" = "--config.file=$PROMETHEUS_CONFIG" ] && arg=--config.file=$remote_write_config
      set -- "$@" "$arg"
    done
  fi
  exec "$@"
fi
