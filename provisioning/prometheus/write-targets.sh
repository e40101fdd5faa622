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
#   PROMETHEUS, ALERTMANAGER
set -eu
dir=$1
shift
: "${MYSQL_ADDRESS:=mysql:3306}"
: "${INNODB_EXPORTER:=innodb-exporter:9207}"
: "${MYSQLD_EXPORTER:=mysqld-exporter:9104}"
: "${NODE_EXPORTER:=node-exporter:9100}"
: "${PROMETHEUS:=localhost:9090}"
: "${ALERTMANAGER:=alertmanager:9093}"

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
  labels: {instance: '$MYSQL_ADDRESS'}"
write prometheus.yml "- targets: ['$PROMETHEUS']"
write alertmanager.yml "- targets: ['$ALERTMANAGER']"

if [ "${1:-}" = "--" ]; then
  shift
  exec "$@"
fi
