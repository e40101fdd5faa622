#!/bin/sh
# Prepare the sbtest tables once, then run oltp_read_write at SYSBENCH_RATE transactions per second.
set -eu
cfg=$(mktemp)
printf 'mysql-password=%s\n' "$MYSQL_PASSWORD" > "$cfg"   # kept off the command line
common="--config-file=$cfg --db-driver=mysql --mysql-host=$MYSQL_HOST --mysql-port=$MYSQL_PORT \
  --mysql-user=$MYSQL_USER --mysql-db=sbtest --tables=${SYSBENCH_TABLES:-4} --table-size=${SYSBENCH_TABLE_SIZE:-100000}"
# shellcheck disable=SC2086
sysbench oltp_read_write $common prepare 2>/dev/null || echo "sbtest tables already there"
# shellcheck disable=SC2086
exec sysbench oltp_read_write $common --threads="${SYSBENCH_THREADS:-4}" --rate="${SYSBENCH_RATE:-50}" \
  --time=0 --report-interval=60 --db-ps-mode=disable --mysql-ignore-errors=all run
