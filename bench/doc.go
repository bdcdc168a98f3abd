// Command bench runs side-by-side benchmarks of Cellar, Redis and Redka on
// this machine and writes the results as ratios to Redis
// (bench/results/latest.md, latest.json, latest.png; the -quick run writes
// quick.*).
//
// Run it with `make bench` or `make bench-quick` (or `go run ./bench -h`).
//
// What it owns: the peer processes it starts (redis-server, Cellar, Redka,
// redis-benchmark), each in its own process group, on its own free loopback
// port, with a fresh data directory under bench/work/. Whatever happens (an
// error, Ctrl-C, a hung benchmark), every process group it started is killed
// before it exits.
//
// How it measures, and the rules it keeps:
//   - Every figure comes from this run. Servers are measured interleaved:
//     for every test, each server in turn (the order rotates every round),
//     so slow drift of a noisy machine hits all of them alike. Each round
//     starts every server afresh.
//   - A figure is the median over rounds; the spread (min–max) is reported
//     next to it. Ratios are taken between medians of the same run.
//   - A server that lacks a command is reported "unsupported" with the
//     server's error text, a benchmark that stops receiving replies is killed
//     and reported "stalled", any other failure "failed"; none of these ever
//     becomes a number.
//   - No timed assertion anywhere: the goals are reported met or missed, and
//     the exit status says only whether the harness itself worked.
package main
