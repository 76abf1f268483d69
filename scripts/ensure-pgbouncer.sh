#!/usr/bin/env bash
# ensure-pgbouncer.sh makes pgbouncer available for the integration tests
# (respool behind PgBouncer in transaction mode; see ensure-package.sh).
exec bash "$(dirname "$0")/ensure-package.sh" pgbouncer pgbouncer pgbouncer /run/postgresql/pgbouncer.pid
