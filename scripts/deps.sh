#!/usr/bin/env bash
# Installs what Cellar's tests and benchmarks run beside it, from Debian's
# packages: redis-server (the reference the compatibility tests compare
# against), redis-tools (redis-cli and redis-benchmark, real clients).
# Idempotent: does nothing when they are present.
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
{ command -v redis-cli >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1; } || need+=(redis-tools)
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis)
[ ${#need[@]} -eq 0 ] && exit 0

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
