#!/usr/bin/env bash
# ensure-redis.sh makes redis-server available for the integration tests
# (the shared budget's Redis store; see ensure-package.sh).
exec bash "$(dirname "$0")/ensure-package.sh" redis-server redis-server redis-server /run/redis/redis-server.pid
