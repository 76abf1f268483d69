#!/usr/bin/env bash
# ensure-redis.sh makes redis-server available for the integration tests
# (the shared budget's Redis store). It is idempotent, prints one line saying
# what it did, and leaves no system Redis service running (tests start their
# own on random loopback ports).
set -euo pipefail

have_redis() { command -v redis-server >/dev/null 2>&1; }

# stop_service stops a Redis started by the package's postinst, if any, so
# nothing is left holding port 6379.
stop_service() {
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet redis-server 2>/dev/null; then
		systemctl stop redis-server >/dev/null 2>&1 || true
	fi
	if command -v service >/dev/null 2>&1; then
		service redis-server stop >/dev/null 2>&1 || true
	fi
	if [ -f /run/redis/redis-server.pid ]; then
		kill "$(cat /run/redis/redis-server.pid)" 2>/dev/null || true
	fi
}

if have_redis; then
	echo "ensure-redis: redis-server already installed ($(command -v redis-server))"
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-redis: redis-server missing and cannot install (need root and apt-get): install redis-server" >&2
	exit 1
fi

install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/tmp/ensure-redis.log 2>&1
}

if install; then
	how="installed redis-server"
elif apt-get update -qq >>/tmp/ensure-redis.log 2>&1 && install; then
	how="installed redis-server after apt-get update"
else
	echo "ensure-redis: apt-get install redis-server failed (see /tmp/ensure-redis.log)" >&2
	exit 1
fi

stop_service
if ! have_redis; then
	echo "ensure-redis: redis-server installed but not found" >&2
	exit 1
fi
echo "ensure-redis: $how"
