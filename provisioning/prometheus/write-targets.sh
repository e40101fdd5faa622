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
#   PROMETHEUS_B       the second replica with STACK_STORE=thanos (default prometheus-b:9090): each replica
#                      scrapes both, so that the two differ in their replica label only
#   STACK_STORE        victoriametrics: Prometheus also ships every sample with remote_write to
#                      VICTORIAMETRICS (its /api/v1/write), where vmalert evaluates the same rules. The
#                      script writes PROMETHEUS_CONFIG with that remote_write section added, as
#                      prometheus-remote-write.yml beside it, and the command runs that file instead.
#                      thanos: this Prometheus is replica PROMETHEUS_REPLICA of a pair behind Thanos. The
#                      script writes PROMETHEUS_CONFIG with the external label replica="PROMETHEUS_REPLICA"
#                      added (the only difference between the two), and that label dropped from the alerts it sends
#                      (both replicas send the same alert, which Alertmanager keeps once), as
#                      prometheus-replica-PROMETHEUS_REPLICA.yml beside it; the command runs that file,
#                      with TSDB blocks of THANOS_BLOCK_DURATION that are never compacted locally, as the
#                      Thanos sidecar needs to upload each block once.
#                      Empty (the default): neither.
#   VICTORIAMETRICS    the VictoriaMetrics single node, as host:port
#   PROMETHEUS_REPLICA a or b (default a), with STACK_STORE=thanos
#   THANOS_BLOCK_DURATION
#                      the length of a TSDB block with STACK_STORE=thanos (default 2h, Prometheus' own)
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
: "${PROMETHEUS_REPLICA:=a}"
: "${PROMETHEUS_B:=prometheus-b:9090}"
: "${THANOS_BLOCK_DURATION:=2h}"
: "${PROMETHEUS_CONFIG:=/etc/prometheus/prometheus.yml}"
case $STACK_STORE in
  "" | victoriametrics | thanos) ;;
  *) echo "write-targets.sh: STACK_STORE=$STACK_STORE: victoriametrics, thanos, or empty for none" >&2; exit 2 ;;
esac
case $PROMETHEUS_REPLICA in
  [a-z]) ;;
  *) echo "write-targets.sh: PROMETHEUS_REPLICA=$PROMETHEUS_REPLICA: one letter, a to z" >&2; exit 2 ;;
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
if [ "$STACK_STORE" = thanos ]; then
  write prometheus.yml "- targets: ['$PROMETHEUS', '$PROMETHEUS_B']"
else
  write prometheus.yml "- targets: ['$PROMETHEUS']"
fi
write alertmanager.yml "- targets: ['$ALERTMANAGER']"

# The store's ruler records and alerts from the raw samples: Prometheus' own recorded series and
# ALERTS stay local, so that the store holds each series once.
store_config=
if [ "$STACK_STORE" = victoriametrics ]; then
  store_config=${PROMETHEUS_CONFIG%.yml}-remote-write.yml
  { cat "$PROMETHEUS_CONFIG"; printf '%s\n' "
# Written by write-targets.sh for STACK_STORE=$STACK_STORE.
remote_write:
  - url: http://$VICTORIAMETRICS/api/v1/write
    write_relabel_configs:
      - source_labels: [__name__]
        regex: 'ALERTS|ALERTS_FOR_STATE|.+:.+'
        action: drop"; } > "$store_config.tmp"
  mv "$store_config.tmp" "$store_config"
fi

# The replica's labels go under prometheus.yml's own `global:` and `alerting:` keys (YAML allows a key
# once), so both must stand alone on a line of their own there.
if [ "$STACK_STORE" = thanos ]; then
  store_config=${PROMETHEUS_CONFIG%.yml}-replica-$PROMETHEUS_REPLICA.yml
  awk -v replica="$PROMETHEUS_REPLICA" '
    { print }
    /^global:$/ { print "  # Written by write-targets.sh for STACK_STORE=thanos: this replica of the pair."
                  print "  external_labels: {replica: " replica "}"; found++ }
    /^alerting:$/ { print "  # Both replicas send each alert; without `replica` they are the same alert to Alertmanager."
                    print "  alert_relabel_configs: [{action: labeldrop, regex: replica}]"; found++ }
    END { if (found != 2) { print "write-targets.sh: no global: or alerting: line to extend" > "/dev/stderr"; exit 2 } }
  ' "$PROMETHEUS_CONFIG" > "$store_config.tmp"
  mv "$store_config.tmp" "$store_config"
fi

if [ "${1:-}" = "--" ]; then
  shift
  if [ -n "$store_config" ]; then  # the same command, on the store's configuration
    for arg; do
      shift
      [ "$arg" = "--config.file=$PROMETHEUS_CONFIG" ] && arg=--config.file=$store_config
      set -- "$@" "$arg"
    done
  fi
  if [ "$STACK_STORE" = thanos ]; then  # the sidecar uploads blocks as Prometheus cuts them: none compacted
    set -- "$@" --storage.tsdb.min-block-duration="$THANOS_BLOCK_DURATION" \
      --storage.tsdb.max-block-duration="$THANOS_BLOCK_DURATION"
  fi
  exec "$@"
fi
