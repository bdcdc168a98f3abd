package tests

import (
	"context"
	"strings"
	"testing"
)

// TestInfoClusterSection checks INFO's "# Cluster" section against a real
// redis-server (issue 20): present with cluster_enabled:0 in INFO, INFO
// all, everything, default and cluster, and in Redis's place among the
// sections both servers print (Cellar's own Offload section aside).
func TestInfoClusterSection(t *testing.T) {
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
