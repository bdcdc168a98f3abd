package tests

import (
	"context"
	"sort"
	"strings"
	"testing"
)

// TestInfoClusterSection checks INFO's "# Cluster" section against a real
// redis-server (issue 20): present with cluster_enabled:0 in INFO, INFO
// all, everything, default and cluster, and in Redis's place among the
// sections both servers print (Cellar's own Offload section aside).
func TestInfoClusterSection(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cel, red := dialRaw(t, s.addr), dialRaw(t, startRedis(t))
	for _, args := range [][]string{{"INFO"}, {"INFO", "all"}, {"INFO", "everything"}, {"INFO", "default"}, {"INFO", "cluster"}, {"INFO", "CLUSTER", "server"}} {
		got, err1 := cel.tryDo(args...)
		want, err2 := red.tryDo(args...)
		if err1 != nil || err2 != nil {
			t.Fatalf("%v: %v, %v", args, err1, err2)
		}
		if !strings.Contains(got, "# Cluster\r\ncluster_enabled:0\r\n") {
			t.Errorf("%v: no cluster section in Cellar's reply:\n%s", args, got)
		}
		if !strings.Contains(want, "# Cluster\r\ncluster_enabled:0\r\n") {
			t.Fatalf("%v: Redis's reply has no cluster section (the test's expectation is wrong):\n%s", args, want)
		}
		// The sections both print, in the order each prints them.
		redisOrder := headers(want)
		inRedis := map[string]bool{}
		for _, h := range redisOrder {
			inRedis[h] = true
		}
		var common []string
		for _, h := range headers(got) {
			if inRedis[h] {
				common = append(common, h)
			}
		}
		var redisCommon []string
		inCellar := map[string]bool{}
		for _, h := range common {
			inCellar[h] = true
		}
		for _, h := range redisOrder {
			if inCellar[h] {
				redisCommon = append(redisCommon, h)
			}
		}
		if strings.Join(common, ",") != strings.Join(redisCommon, ",") {
			t.Errorf("%v: section order %v, Redis's %v", args, common, redisCommon)
		}
	}
	// go-redis parses it as clients and tools do.
	info, err := s.client().InfoMap(context.Background(), "cluster").Result()
	if err != nil || info["Cluster"]["cluster_enabled"] != "0" {
		t.Errorf("InfoMap cluster: %v, %v", info, err)
	}
}

// headers lists the "# Section" lines of an INFO reply.
func headers(reply string) []string {
	var hs []string
	for _, line := range strings.Split(reply, "\r\n") {
		if strings.HasPrefix(line, "# ") {
			hs = append(hs, strings.TrimPrefix(line, "# "))
		}
	}
	return hs
}

// TestInfoCommandStats runs the same commands on Cellar and a real
// redis-server and requires the same INFO commandstats counters (calls,
// rejected_calls, failed_calls; usec is time): commands counted once,
// arity and auth refusals as rejected, errors as failed, what EXEC ran
// under its own name, CONFIG RESETSTAT zeroing them all.
func TestInfoCommandStats(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cel, red := dialRaw(t, s.addr), dialRaw(t, startRedis(t))
	script := [][]string{
		{"SET", "counted", "before reset"},
		{"CONFIG", "RESETSTAT"},
		{"SET", "a", "b"}, {"GET", "a"}, {"GET", "a"}, {"GET"},
		{"INCR", "a"}, {"LPUSH", "a", "x"},
		{"NOSUCHCOMMAND"}, {"CONFIG", "NOSUCH"},
		{"CONFIG", "GET", "maxmemory"}, {"CLIENT", "GETNAME"}, {"CLIENT", "SETNAME", "bad name"},
		{"WATCH", "a"}, {"UNWATCH"},
		{"MULTI"}, {"SET", "a", "c"}, {"INCR", "a"}, {"EXEC"},
		{"MULTI"}, {"GET"}, {"EXEC"},
		{"ZADD", "z", "1", "m"}, {"ZSCORE", "z", "m"},
	}
	for _, args := range script {
		c1, err1 := cel.tryDo(args...)
		c2, err2 := red.tryDo(args...)
		if err1 != nil || err2 != nil {
			t.Fatalf("%v: %v, %v", args, err1, err2)
		}
		if c1 != c2 {
			t.Fatalf("%v: Cellar %q, Redis %q", args, c1, c2)
		}
	}
	for round := 0; round < 2; round++ { // the second sees the first INFO
		got, err1 := cel.tryDo("INFO", "commandstats")
		want, err2 := red.tryDo("INFO", "commandstats")
		if err1 != nil || err2 != nil {
			t.Fatalf("INFO: %v, %v", err1, err2)
		}
		if g, w := cmdStats(got), cmdStats(want); g != w {
			t.Errorf("round %d: Cellar's commandstats\n%s\nRedis's\n%s", round, g, w)
		}
	}
	cel.tryDo("CONFIG", "RESETSTAT")
	if got, _ := cel.tryDo("INFO", "commandstats"); strings.Contains(got, "cmdstat_set") {
		t.Errorf("CONFIG RESETSTAT left counters: %q", got)
	}
}

// cmdStats is the calls, rejected_calls and failed_calls of every
// cmdstat_ line of an INFO reply, sorted by command name.
func cmdStats(reply string) string {
	var lines []string
	for _, line := range strings.Split(reply, "\r\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var kept []string
		for _, f := range strings.Split(rest, ",") {
			if k, _, _ := strings.Cut(f, "="); k == "calls" || k == "rejected_calls" || k == "failed_calls" {
				kept = append(kept, f)
			}
		}
		lines = append(lines, name+":"+strings.Join(kept, ","))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
