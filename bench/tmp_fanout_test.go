package main

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestTmpFanout(t *testing.T) {
	addr := os.Getenv("FAN_ADDR")
	if addr == "" {
		t.Skip()
	}
	n, _ := strconv.Atoi(os.Getenv("FAN_SUBS"))
	smp := fanoutRun(context.Background(), addr, n, 3000000, 16, 20*time.Second)
	t.Logf("%s", describe(smp))
}
