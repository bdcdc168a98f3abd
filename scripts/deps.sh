#!/usr/bin/env bash
# Installs what Cellar's tests and benchmarks run beside it:
#   - from Debian's packages: redis-server (the reference the compatibility
#     tests compare against), redis-sentinel (the failover drill's
#     Sentinels), redis-tools (redis-cli and redis-benchmark,
#     real clients), python3-redis and python3-rq (redis-py and the RQ job
#     framework, run with Debian's /usr/bin/python3), nodejs and npm,
#     haproxy (a real load balancer sending the PROXY protocol);
#     wamerican (the word list bench/search builds its corpus from);
#   - from npm: the Node.js clients in tests/clients/node (ioredis and the
#     BullMQ job framework), with `npm ci` from its package-lock.json. Its
#     package.json pins msgpackr-extract (an optional native speed-up of a
#     BullMQ dependency) to 3.0.4, a release whose per-platform packages are
#     all published, so that the lock file lists every platform and `npm ci`
#     accepts it.
# Idempotent: does nothing when everything is present.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
{ command -v redis-cli >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1; } || need+=(redis-tools)
# Debian's Python packages live under Debian's interpreter, not whatever
# python3 comes first in PATH.
{ [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import redis' >/dev/null 2>&1; } || need+=(python3-redis)
{ [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import rq' >/dev/null 2>&1; } || need+=(python3-rq)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
[ -e /usr/share/dict/american-english ] || need+=(wamerican)

if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "deps: need ${need[*]} (Debian packages); run as root or install them" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: need ${need[*]}; this script installs them with apt-get (Debian/Ubuntu)" >&2
    exit 1
  fi
  echo "deps: installing ${need[*]}" >&2
  # Keep the package from starting a system redis-server on port 6379 (the
  # tests start their own on free ports, and make run wants 6379).
  policy=/usr/sbin/policy-rc.d
  made_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    made_policy=1
  fi
  trap '[ -n "$made_policy" ] && $sudo rm -f "$policy"' EXIT
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The Node.js clients, exactly as locked: installed again whenever
# package-lock.json differs from the one last installed (a copy is kept in
# node_modules).
node_dir="$root/tests/clients/node"
stamp="$node_dir/node_modules/.cellar-installed-lock.json"
if ! cmp -s "$node_dir/package-lock.json" "$stamp"; then
  echo "deps: npm ci in tests/clients/node" >&2
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$node_dir/package-lock.json" "$stamp"
fi
