#!/usr/bin/env bash
# ensure-pgbouncer.sh makes pgbouncer available for the integration tests
# (integration/multiproc compares the shared budget with PgBouncer; see
# ensure-package.sh).
exec bash "$(dirname "$0")/ensure-package.sh" pgbouncer pgbouncer pgbouncer /run/postgresql/pgbouncer.pid
