#!/usr/bin/env bash
# ensure-package.sh PACKAGE BINARY SERVICE PIDFILE makes BINARY available for
# the integration tests, installing the Debian PACKAGE with apt when it is
# missing (apt-get update first if the install fails). It is idempotent,
# prints one line saying what it did, and leaves no system SERVICE running
# (tests start their own servers on random loopback ports): a service the
# package's postinst started is stopped, by systemd or service, or by the
# pid in PIDFILE. ensure-mariadb.sh, ensure-redis.sh and ensure-pgbouncer.sh call it.
set -euo pipefail

pkg=$1 bin=$2 service=$3 pidfile=$4
name="ensure-${pkg%-server}"
log=/tmp/$name.log

have_binary() {
	command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ]
}

stop_service() {
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
		systemctl stop "$service" >/dev/null 2>&1 || true
	fi
	if command -v service >/dev/null 2>&1; then
		service "$service" stop >/dev/null 2>&1 || true
	fi
	if pgrep -x "$bin" >/dev/null 2>&1 && [ -f "$pidfile" ]; then
		kill "$(cat "$pidfile")" 2>/dev/null || true
	fi
}

if have_binary; then
	echo "$name: $bin already installed ($(command -v "$bin" || echo "/usr/sbin/$bin"))"
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "$name: $bin missing and cannot install (need root and apt-get): install $pkg" >&2
	exit 1
fi

install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >"$log" 2>&1
}

if install; then
	how="installed $pkg"
elif apt-get update -qq >>"$log" 2>&1 && install; then
	how="installed $pkg after apt-get update"
else
	echo "$name: apt-get install $pkg failed (see $log)" >&2
	exit 1
fi

stop_service
if ! have_binary; then
	echo "$name: $pkg installed but $bin not found" >&2
	exit 1
fi
echo "$name: $how"
