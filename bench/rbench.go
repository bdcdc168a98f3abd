package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Outcome statuses. Only "ok" carries numbers.
const (
	statusOK          = "ok"
	statusUnsupported = "unsupported" // the server lacks a command the test needs
	statusFailed      = "failed"      // anything else that went wrong
	statusStalled     = "stalled"     // replies stopped arriving; the client was killed
)

// sample is one measurement of one test against one server.
type sample struct {
	Status string  `json:"status"`
	Detail string  `json:"detail,omitempty"`
	Value  float64 `json:"value,omitempty"` // in the table's metric: ops/s, items/s or KiB
	AvgMs  float64 `json:"avg_ms,omitempty"`
	P50Ms  float64 `json:"p50_ms,omitempty"`
	P99Ms  float64 `json:"p99_ms,omitempty"`
	MaxMs  float64 `json:"max_ms,omitempty"`
}

// rbJob is one redis-benchmark invocation: either a built-in test (-t) or
// a custom command line.
type rbJob struct {
	Clients  int
	Requests int
	Pipeline int
	Keyspace int // -r
	DataSize int // -d
	Test     string
	Command  []string
	Row      string // prefix of the CSV row that holds the result
}

func (j rbJob) args(addr string) []string {
	host, port, _ := strings.Cut(addr, ":")
	a := []string{
		"-h", host, "-p", port,
		"-c", strconv.Itoa(j.Clients), "-n", strconv.Itoa(j.Requests),
		"-P", strconv.Itoa(max(j.Pipeline, 1)), "--csv",
	}
	if j.Keyspace > 0 {
		a = append(a, "-r", strconv.Itoa(j.Keyspace))
	}
	if j.DataSize > 0 {
		a = append(a, "-d", strconv.Itoa(j.DataSize))
	}
	if len(j.Command) > 0 {
		return append(a, j.Command...)
	}
	return append(a, "-t", j.Test)
}

// runBenchmark runs one redis-benchmark job against addr. A run whose
// process reads nothing for stallAfter is killed and reported stalled; the
// whole run is bounded by hardLimit.
func runBenchmark(ctx context.Context, bin, addr string, j rbJob, stallAfter, hardLimit time.Duration) sample {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, j.args(addr)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := startGroup(cmd, "redis-benchmark"); err != nil {
		return sample{Status: statusFailed, Detail: "start redis-benchmark: " + err.Error()}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	pid := cmd.Process.Pid
	kill := func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }
	defer procs.remove(pid)
	_, portStr, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(portStr)

	// Most runs end within seconds; the watchdog looks at the sockets only
	// once a run has lasted a while, once a second, so it costs the
	// measurement next to nothing.
	watchAfter := min(5*time.Second, stallAfter)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start := time.Now()
	lastRecv, lastChange := int64(-1), time.Now()
	var waitErr error
	var why string
loop:
	for {
		select {
		case waitErr = <-waited:
			break loop
		case <-ctx.Done():
			kill()
			<-waited
			return sample{Status: statusFailed, Detail: "interrupted"}
		case now := <-tick.C:
			if now.Sub(start) < watchAfter {
				lastChange = now
				continue
			}
			if n, err := receivedFrom(port); err != nil || n != lastRecv {
				// Without ss, only the hard limit applies.
				lastRecv, lastChange = n, now
			}
			switch {
			case now.Sub(lastChange) > stallAfter:
				why = fmt.Sprintf("no reply for %s; client killed", stallAfter)
			case now.Sub(start) > hardLimit:
				why = fmt.Sprintf("still running after %s; client killed", hardLimit)
			default:
				continue
			}
			kill()
			<-waited
			return sample{Status: statusStalled, Detail: why}
		}
	}
	kill() // nothing of the group may outlive its leader
	return classify(stdout.String(), stderr.String(), waitErr, j.Row)
}

// classify turns redis-benchmark's output into a sample: the CSV row whose
// name starts with row, or the reason there is none.
func classify(stdout, stderr string, waitErr error, row string) sample {
	if msg := serverError(stdout + "\n" + stderr); msg != "" {
		if strings.Contains(msg, "unknown command") {
			return sample{Status: statusUnsupported, Detail: shortUnknown(msg)}
		}
		return sample{Status: statusFailed, Detail: msg}
	}
	rows, perr := parseCSV(stdout)
	if waitErr != nil {
		detail := "redis-benchmark: " + waitErr.Error()
		if line := firstLine(stderr); line != "" {
			detail += ": " + line
		}
		return sample{Status: statusFailed, Detail: detail}
	}
	if perr != nil {
		return sample{Status: statusFailed, Detail: perr.Error()}
	}
	for _, r := range rows {
		if !strings.HasPrefix(strings.ToUpper(r.name), strings.ToUpper(row)) {
			continue
		}
		if r.err != "" {
			return sample{Status: statusFailed, Detail: r.err}
		}
		s := r.sample
		s.Status = statusOK
		return s
	}
	detail := fmt.Sprintf("no CSV row %q in redis-benchmark's output", row)
	if line := firstLine(stderr); line != "" {
		detail += ": " + line
	}
	return sample{Status: statusFailed, Detail: detail}
}

// serverError finds redis-benchmark's report of an error reply.
func serverError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Error from server:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// shortUnknown keeps "ERR unknown command 'LPUSH'" and drops the
// arguments Redis echoes after it (random payloads).
func shortUnknown(msg string) string {
	if i := strings.Index(msg, ", with args"); i > 0 {
		return msg[:i]
	}
	return msg
}

func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

type csvRow struct {
	name   string
	sample sample
	err    string // a row whose numbers could not be read
}

// parseCSV reads redis-benchmark's --csv output. Columns are found by the
// header's names ("test","rps","avg_latency_ms","min_latency_ms",
// "p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms" in
// 7.0), so an older client without latency columns still yields ops/s.
func parseCSV(out string) ([]csvRow, error) {
	r := csv.NewReader(strings.NewReader(out))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var header map[string]int
	var rows []csvRow
	for {
		rec, err := r.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return rows, fmt.Errorf("redis-benchmark CSV: %w", err)
		}
		if len(rec) == 0 {
			continue
		}
		if header == nil {
			if rec[0] != "test" {
				continue // a warning line before the header
			}
			header = map[string]int{}
			for i, h := range rec {
				header[h] = i
			}
			if _, ok := header["rps"]; !ok {
				return nil, errors.New("redis-benchmark CSV: header has no rps column")
			}
			continue
		}
		row := csvRow{name: rec[0]}
		get := func(col string) (float64, bool) {
			i, ok := header[col]
			if !ok || i >= len(rec) {
				return 0, false
			}
			v, err := strconv.ParseFloat(rec[i], 64)
			return v, err == nil
		}
		rps, ok := get("rps")
		switch {
		case !ok:
			row.err = fmt.Sprintf("%s: ops/s %q is not a number", rec[0], rec[header["rps"]])
		case rps <= 0 || rps > 1e12:
			// redis-benchmark prints "inf" when a run is shorter than its
			// clock's resolution: too few requests to measure.
			row.err = fmt.Sprintf("%s: ops/s %v: too few requests to measure", rec[0], rps)
		default:
			row.sample.Value = rps
			row.sample.AvgMs, _ = get("avg_latency_ms")
			row.sample.P50Ms, _ = get("p50_latency_ms")
			row.sample.P99Ms, _ = get("p99_latency_ms")
			row.sample.MaxMs, _ = get("max_latency_ms")
		}
		rows = append(rows, row)
	}
	if header == nil {
		return nil, errors.New("redis-benchmark printed no CSV header")
	}
	return rows, nil
}
