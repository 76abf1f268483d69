#!/usr/bin/env bash
# ensure-mariadb.sh makes mariadbd and mariadb-install-db available for the
# integration tests. It is idempotent, prints one line saying what it did, and
# leaves no system MariaDB service running (tests use their own random ports).
set -euo pipefail

have_mariadbd() {
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]
}

# stop_service stops a MariaDB started by the package's postinst, if any, so
# nothing is left holding port 3306.
stop_service() {
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mariadb 2>/dev/null; then
		systemctl stop mariadb >/dev/null 2>&1 || true
	fi
	if command -v service >/dev/null 2>&1; then
		service mariadb stop >/dev/null 2>&1 || true
	fi
	if pgrep -x mariadbd >/dev/null 2>&1 && [ -f /run/mysqld/mysqld.pid ]; then
		kill "$(cat /run/mysqld/mysqld.pid)" 2>/dev/null || true
	fi
}

if have_mariadbd; then
	echo "ensure-mariadb: mariadbd already installed ($(command -v mariadbd || echo /usr/sbin/mariadbd))"
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-mariadb: mariadbd missing and cannot install (need root and apt-get): install mariadb-server" >&2
	exit 1
fi

install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mariadb-server >/tmp/ensure-mariadb.log 2>&1
}

if install; then
	how="installed mariadb-server"
elif apt-get update -qq >>/tmp/ensure-mariadb.log 2>&1 && install; then
	how="installed mariadb-server after apt-get update"
else
	echo "ensure-mariadb: apt-get install mariadb-server failed (see /tmp/ensure-mariadb.log)" >&2
	exit 1
fi

stop_service
if ! have_mariadbd; then
	echo "ensure-mariadb: mariadb-server installed but mariadbd not found" >&2
	exit 1
fi
echo "ensure-mariadb: $how"
