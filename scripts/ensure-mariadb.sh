#!/usr/bin/env bash
# ensure-mariadb.sh makes mariadbd and mariadb-install-db available for the
# integration tests (see ensure-package.sh).
exec bash "$(dirname "$0")/ensure-package.sh" mariadb-server mariadbd mariadb /run/mysqld/mysqld.pid
