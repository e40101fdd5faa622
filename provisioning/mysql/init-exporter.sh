#!/bin/sh
# Run once by the demo MySQL's entrypoint: the exporters' account and the sysbench schema.
# The passwords come from the environment (.env), never from this file.
set -eu
mysql -uroot -p"$MYSQL_ROOT_PASSWORD" <<SQL
CREATE USER IF NOT EXISTS '${MYSQL_EXPORTER_USER}'@'%' IDENTIFIED BY '${MYSQL_EXPORTER_PASSWORD}' WITH MAX_USER_CONNECTIONS 6;
GRANT PROCESS, REPLICATION CLIENT ON *.* TO '${MYSQL_EXPORTER_USER}'@'%';
GRANT SELECT ON performance_schema.* TO '${MYSQL_EXPORTER_USER}'@'%';
CREATE DATABASE IF NOT EXISTS sbtest;
SQL
