#!/usr/bin/env bash
# Runs go test with the arguments given (make test's), keeps its whole
# output in a log, and on failure ends with a short summary of it: the
# failed tests, the packages, and for a package that ran out of time the
# tests still running then. A timed-out package prints every goroutine's
# stack last, thousands of lines; what failed must not be lost above them.
#
# The log stays in $TEST_LOG (default: a file in the temporary directory).
set -uo pipefail

log=${TEST_LOG:-$(mktemp "${TMPDIR:-/tmp}/cellar-test.XXXXXX.log")}
"${GO:-go}" test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
	echo
	echo "=== summary of the failed run (whole output: $log)"
	# The failed tests and packages, and a timeout's running tests (the
	# tab-indented lines after "running tests:").
	awk '
		/^panic: test timed out/ { print; running = 1; next }
		running && /^running tests:/ { print; next }
		running && /^\t/ { print; next }
		running { running = 0 }
		# The first lines a failed test printed say why.
		failed > 0 && /^[ \t]+[^ \t-]/ { print; failed--; next }
		{ failed = 0 }
		/^[ \t]*--- FAIL/ { print; failed = 4; next }
		/^FAIL/ || /^panic:/ || /DATA RACE/ { print }
	' "$log" | head -n 60
fi
exit "$rc"
