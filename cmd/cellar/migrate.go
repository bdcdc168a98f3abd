package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/keydesc"
)

// migrate is `cellar migrate --from redis://... [--to host:port]`: issue
// 16's path for a Redis that refuses PSYNC (managed services, `rename-command
// SYNC ""`). It is a client of both servers and runs seed 004's session over
// ordinary commands:
//
//   - back-fill: SCAN pages over every database of the source, each key
//     copied with DUMP and RESTORE REPLACE ABSTTL (or, where DUMP is
//     refused, read and written type by type); after each page the cursor
//     is checkpointed in the target (hash cellar:migrate:<source> in db 0),
//     so an interrupted run resumes where it stopped;
//   - prune: keys the target holds that the source does not are deleted;
//   - waitlist: the keys keyspace notifications report as changed since the
//     run began (the source's notify-keyspace-events is set to KEA), at
//     most --max-dirty of them;
//   - caught up: the dirty keys are copied again until none is left, then
//     "caught up" is logged (the SYNC point), the checkpoint deleted and,
//     without --follow, the exit status is 0;
//   - follow (--follow): keeps copying what notifications report until
//     SIGINT or SIGTERM.
//
// Exit status: 0 caught up (and verified with --verify), 1 an error or a
// difference found by --verify, 2 bad usage or a source that refuses
// keyspace notifications.
func migrate(args []string) int {
	fs := flag.NewFlagSet("cellar migrate", flag.ContinueOnError)
	from := fs.String("from", "", "the source: redis://[user:pass@]host:port[/db] (rediss:// for TLS)")
	useTLS := fs.Bool("tls", false, "connect to the source with TLS")
	tlsCA := fs.String("tls-ca", "", "PEM file of the CA certificates that sign the source's certificate (default: the system's)")
	to := fs.String("to", "127.0.0.1:6379", "the target Cellar's host:port")
	toPassword := fs.String("to-password", "", "the target's password (AUTH)")
	toUser := fs.String("to-user", "", "the target's user name (AUTH with two arguments)")
	maxDirty := fs.Int("max-dirty", 1000000, "most keys the waitlist holds; beyond it the run stops with an error")
	count := fs.Int("count", 1000, "SCAN COUNT per page")
	follow := fs.Bool("follow", false, "after catching up, keep following the source until SIGINT/SIGTERM")
	verify := fs.Bool("verify", false, "after catching up, compare every key of both servers and print the differences")
	verifyOnly := fs.Bool("verify-only", false, "only compare the keys of both servers (as --verify), copying nothing")
	maxRate := fs.Float64("max-rate", 0, "back-fill at most this many keys/s, to spare the source (0: no limit)")
	restart := fs.Bool("restart", false, "ignore a checkpoint left by an interrupted run and start over")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for one reply from either server before giving up")
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *from == "" || *maxDirty < 1 || *count < 1 {
		fmt.Fprintln(os.Stderr, "cellar migrate: --from redis://host:port is required (see --help)")
		return 2
	}
	opt, err := redis.ParseURL(*from)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cellar migrate: --from: %v\n", err)
		return 2
	}
	if *useTLS && opt.TLSConfig == nil {
		host, _, _ := strings.Cut(opt.Addr, ":")
		opt.TLSConfig = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	if *tlsCA != "" {
		if opt.TLSConfig == nil {
			fmt.Fprintln(os.Stderr, "cellar migrate: --tls-ca without --tls or rediss://")
			return 2
		}
		pem, err := os.ReadFile(*tlsCA)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cellar migrate: --tls-ca: %v\n", err)
			return 2
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fmt.Fprintf(os.Stderr, "cellar migrate: --tls-ca: no certificate in %s\n", *tlsCA)
			return 2
		}
		opt.TLSConfig.RootCAs = pool
	}
	u, _ := url.Parse(*from)
	oneDB := u != nil && strings.Trim(u.Path, "/") != ""
	opt.Protocol = 2
	// go-redis's 3 s default gives up on a busy server mid-copy; a copy
	// that waits longer for a large RESTORE loses nothing.
	opt.ReadTimeout, opt.WriteTimeout = *timeout, *timeout
	m := &migration{
		log:      log.New(os.Stderr, "cellar migrate: ", log.LstdFlags|log.LUTC),
		srcOpt:   opt,
		tgtOpt:   &redis.Options{Addr: *to, Username: *toUser, Password: *toPassword, Protocol: 2, ReadTimeout: *timeout, WriteTimeout: *timeout},
		src:      map[int]*redis.Client{},
		tgt:      map[int]*redis.Client{},
		oneDB:    oneDB,
		count:    int64(*count),
		maxDirty: *maxDirty,
		dirty:    map[int]map[string]struct{}{},
		source:   opt.Addr,
		maxRate:  *maxRate,
	}
	m.markerCh = "cellar:migrate:marker:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	m.ckKey = "cellar:migrate:" + m.source
	defer m.close()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if *verifyOnly {
		return m.verify(ctx, os.Stdout)
	}
	code := m.run(ctx, *follow, *restart)
	if code == 0 && *verify {
		// After --follow the signal that ended it has cancelled ctx; a
		// second signal still ends the process.
		vctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		code = m.verify(vctx, os.Stdout)
	}
	return code
}

type migration struct {
	log      *log.Logger
	srcOpt   *redis.Options
	tgtOpt   *redis.Options
	src, tgt map[int]*redis.Client // per database
	oneDB    bool
	count    int64
	source   string // host:port, the checkpoint's name
	ckKey    string
	markerCh string
	useDump  bool

	mu       sync.Mutex
	dirty    map[int]map[string]struct{}
	nDirty   int
	maxDirty int
	overflow bool
	linkErr  error
	markers  chan string

	keys, bytes   int64
	keys0, bytes0 int64 // copied by an interrupted run before this one
	scanned       int64 // keys the back-fill's SCAN pages named, this run and before
	scanned0      int64
	maxRate       float64 // keys/s of the back-fill at most; 0: no limit
	total         int64
	start         time.Time
	lastLog       time.Time
}

func (m *migration) close() {
	for _, c := range m.src {
		c.Close()
	}
	for _, c := range m.tgt {
		c.Close()
	}
}

func (m *migration) srcDB(db int) *redis.Client {
	if c := m.src[db]; c != nil {
		return c
	}
	o := *m.srcOpt
	o.DB = db
	c := redis.NewClient(&o)
	m.src[db] = c
	return c
}

func (m *migration) tgtDB(db int) *redis.Client {
	if c := m.tgt[db]; c != nil {
		return c
	}
	o := *m.tgtOpt
	o.DB = db
	c := redis.NewClient(&o)
	m.tgt[db] = c
	return c
}

// databases lists the source's databases that hold keys (INFO keyspace),
// or only the one the URL names.
func (m *migration) databases(ctx context.Context) ([]int, error) {
	if m.oneDB {
		return []int{m.srcOpt.DB}, nil
	}
	info, err := m.srcDB(0).Info(ctx, "keyspace").Result()
	if err != nil {
		return nil, err
	}
	var dbs []int
	m.total = 0
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(line, ":")
		if n, found := strings.CutPrefix(name, "db"); ok && found {
			db, err := strconv.Atoi(n)
			if err != nil {
				continue
			}
			dbs = append(dbs, db)
			if k, ok := strings.CutPrefix(strings.Split(rest, ",")[0], "keys="); ok {
				v, _ := strconv.ParseInt(k, 10, 64)
				m.total += v
			}
		}
	}
	sort.Ints(dbs)
	return dbs, nil
}

func (m *migration) run(ctx context.Context, follow, restart bool) int {
	m.start = time.Now()
	m.lastLog = m.start
	src := m.srcDB(0)
	if err := src.Ping(ctx).Err(); err != nil {
		m.log.Printf("cannot reach the source %s: %v", m.source, err)
		return 1
	}
	if err := m.tgtDB(0).Ping(ctx).Err(); err != nil {
		m.log.Printf("cannot reach the target %s: %v", m.tgtOpt.Addr, err)
		return 1
	}
	// DUMP where the source allows it (a missing key answers nil).
	if err := src.Dump(ctx, m.markerCh).Err(); err == nil || err == redis.Nil {
		m.useDump = true
	} else {
		m.log.Printf("the source refuses DUMP (%v): keys are copied type by type", err)
	}
	// The setting as it was goes back when the run ends (not after a
	// kill -9: then it stays KEA).
	if old, err := src.ConfigGet(ctx, "notify-keyspace-events").Result(); err == nil {
		if prev, ok := old["notify-keyspace-events"]; ok && prev != "AKE" {
			defer func() {
				if err := src.ConfigSet(context.Background(), "notify-keyspace-events", prev).Err(); err != nil {
					m.log.Printf("restoring notify-keyspace-events %q on the source: %v", prev, err)
				}
			}()
		}
	}
	if err := src.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		m.log.Printf("the source refuses CONFIG SET notify-keyspace-events KEA (%v): without keyspace notifications the changes made during the copy cannot be followed; enable them on the source (KEA, or at least Kg$lshzxe) and run again", err)
		return 2
	}
	ps := src.PSubscribe(ctx, "__keyspace@*__:*")
	defer ps.Close()
	if err := ps.Subscribe(ctx, m.markerCh); err != nil {
		m.log.Printf("cannot subscribe on the source: %v", err)
		return 1
	}
	// Both subscriptions confirmed before anything is copied: every change
	// from here on reaches the waitlist.
	for n := 0; n < 2; {
		msg, err := ps.Receive(ctx)
		if err != nil {
			m.log.Printf("cannot subscribe on the source: %v", err)
			return 1
		}
		if _, ok := msg.(*redis.Subscription); ok {
			n++
		}
	}
	m.markers = make(chan string, 16)
	go m.listen(ps)

	dbs, err := m.databases(ctx)
	if err != nil {
		m.log.Printf("INFO keyspace on the source: %v", err)
		return 1
	}
	startDB, cursor := 0, uint64(0)
	if !restart {
		ck, err := m.tgtDB(0).HGetAll(ctx, m.ckKey).Result()
		if err != nil {
			m.log.Printf("reading the checkpoint %s on the target: %v", m.ckKey, err)
			return 1
		}
		if len(ck) > 0 {
			startDB, _ = strconv.Atoi(ck["db"])
			cursor, _ = strconv.ParseUint(ck["cursor"], 10, 64)
			m.keys, _ = strconv.ParseInt(ck["keys"], 10, 64)
			m.scanned, _ = strconv.ParseInt(ck["scanned"], 10, 64)
			m.scanned0 = m.scanned
			m.bytes, _ = strconv.ParseInt(ck["bytes"], 10, 64)
			m.keys0, m.bytes0 = m.keys, m.bytes
			m.log.Printf("resuming from the checkpoint: db %d cursor %d (%d keys scanned, %d bytes copied before)", startDB, cursor, m.scanned, m.bytes)
		}
	}
	m.log.Printf("back-fill from %s to %s: %d keys in databases %v", m.source, m.tgtOpt.Addr, m.total, dbs)
	for _, db := range dbs {
		if db < startDB {
			continue
		}
		if db > startDB {
			cursor = 0
		}
		for {
			if err := ctx.Err(); err != nil {
				m.log.Printf("stopped by a signal during the back-fill; the checkpoint is kept: run again to resume")
				return 1
			}
			if code := m.check(); code != 0 {
				return code
			}
			keys, next, err := m.srcDB(db).Scan(ctx, cursor, "", m.count).Result()
			if err != nil {
				m.log.Printf("SCAN db %d: %v", db, err)
				return 1
			}
			if err := m.copyKeys(ctx, db, keys); err != nil {
				m.log.Printf("copying db %d: %v", db, err)
				return 1
			}
			cursor = next
			m.scanned += int64(len(keys))
			// A database finished: the checkpoint names the next one, so
			// a resume does not scan it again.
			ckDB := db
			if cursor == 0 {
				ckDB = db + 1
			}
			if err := m.tgtDB(0).HSet(ctx, m.ckKey, "db", ckDB, "cursor", cursor, "keys", m.keys, "bytes", m.bytes, "scanned", m.scanned).Err(); err != nil {
				m.log.Printf("writing the checkpoint: %v", err)
				return 1
			}
			m.progress(false)
			if m.maxRate > 0 {
				// Pace the back-fill: sleep until this run's keys are
				// within --max-rate of the time it has taken.
				due := m.start.Add(time.Duration(float64(m.scanned-m.scanned0) / m.maxRate * float64(time.Second)))
				select {
				case <-time.After(time.Until(due)):
				case <-ctx.Done():
				}
			}
			if cursor == 0 {
				break
			}
		}
	}
	m.progress(true)
	if err := m.prune(ctx); err != nil {
		m.log.Printf("removing keys the source does not hold: %v", err)
		return 1
	}
	if code := m.catchUp(ctx); code != 0 {
		return code
	}
	if err := m.tgtDB(0).Del(ctx, m.ckKey).Err(); err != nil {
		m.log.Printf("deleting the checkpoint: %v", err)
		return 1
	}
	m.log.Printf("caught up: %d keys scanned, %d copies, %d bytes in %s", m.scanned, m.keys, m.bytes, time.Since(m.start).Round(time.Millisecond))
	if !follow {
		return 0
	}
	m.log.Printf("following the source until SIGINT or SIGTERM")
	for {
		select {
		case <-ctx.Done():
			m.log.Printf("stopped following: %d keys copied in all", m.keys)
			return 0
		case <-time.After(100 * time.Millisecond):
		}
		if code := m.copyDirty(ctx); code != 0 {
			if ctx.Err() != nil {
				return 0
			}
			return code
		}
	}
}

// listen moves keyspace notifications into the waitlist and markers to
// catchUp. Any error ends it: a lost subscription loses changes, so the
// run stops (check) rather than guess.
func (m *migration) listen(ps *redis.PubSub) {
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			m.mu.Lock()
			m.linkErr = err
			m.mu.Unlock()
			close(m.markers)
			return
		}
		switch msg := msg.(type) {
		case *redis.Message:
			if msg.Channel == m.markerCh {
				m.markers <- msg.Payload
				continue
			}
			db, key, ok := parseKeyspace(msg.Channel)
			if !ok || (m.oneDB && db != m.srcOpt.DB) {
				continue
			}
			m.mu.Lock()
			set := m.dirty[db]
			if set == nil {
				set = map[string]struct{}{}
				m.dirty[db] = set
			}
			if _, seen := set[key]; !seen {
				if m.nDirty >= m.maxDirty {
					m.overflow = true
				} else {
					set[key] = struct{}{}
					m.nDirty++
				}
			}
			m.mu.Unlock()
		case *redis.Subscription:
			// A second confirmation means go-redis reconnected: changes
			// made while the link was down were never seen.
			m.mu.Lock()
			m.linkErr = errors.New("the subscription to keyspace notifications was re-established after a dropped link")
			m.mu.Unlock()
		}
	}
}

// parseKeyspace splits "__keyspace@<db>__:<key>".
func parseKeyspace(ch string) (int, string, bool) {
	rest, ok := strings.CutPrefix(ch, "__keyspace@")
	if !ok {
		return 0, "", false
	}
	n, key, ok := strings.Cut(rest, "__:")
	if !ok {
		return 0, "", false
	}
	db, err := strconv.Atoi(n)
	return db, key, err == nil
}

// check reports a full waitlist or a lost subscription as the run's end.
func (m *migration) check() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.overflow {
		m.log.Printf("the waitlist is full: more than %d keys changed on the source while they were copied (--max-dirty); raise --max-dirty or migrate at a quieter time (the checkpoint is kept)", m.maxDirty)
		return 1
	}
	if m.linkErr != nil {
		m.log.Printf("keyspace notifications lost: %v; run again to resume", m.linkErr)
		return 1
	}
	return 0
}

// catchUp copies the dirty keys until none is left and a marker published
// after the last copy has come back with nothing new before it: every
// change made before the marker was then seen and copied.
func (m *migration) catchUp(ctx context.Context) int {
	for round := 1; ; round++ {
		if code := m.copyDirty(ctx); code != 0 {
			return code
		}
		mark := strconv.Itoa(round)
		if err := m.srcDB(0).Publish(ctx, m.markerCh, mark).Err(); err != nil {
			m.log.Printf("PUBLISH on the source: %v", err)
			return 1
		}
		for got := ""; got != mark; {
			select {
			case v, ok := <-m.markers:
				if !ok {
					return m.check()
				}
				got = v
			case <-ctx.Done():
				m.log.Printf("stopped by a signal before catching up; the checkpoint is kept")
				return 1
			case <-time.After(30 * time.Second):
				m.log.Printf("the source did not deliver our PUBLISH within 30 s")
				return 1
			}
		}
		m.mu.Lock()
		n := m.nDirty
		m.mu.Unlock()
		if n == 0 {
			return m.check()
		}
	}
}

// copyDirty takes the waitlist and copies its keys.
func (m *migration) copyDirty(ctx context.Context) int {
	if code := m.check(); code != 0 {
		return code
	}
	m.mu.Lock()
	dirty := m.dirty
	m.dirty = map[int]map[string]struct{}{}
	m.nDirty = 0
	m.mu.Unlock()
	for db, set := range dirty {
		keys := make([]string, 0, min(len(set), int(m.count)))
		for k := range set {
			keys = append(keys, k)
			if len(keys) == int(m.count) {
				if err := m.copyKeys(ctx, db, keys); err != nil {
					m.log.Printf("copying db %d: %v", db, err)
					return 1
				}
				keys = keys[:0]
			}
		}
		if err := m.copyKeys(ctx, db, keys); err != nil {
			m.log.Printf("copying db %d: %v", db, err)
			return 1
		}
	}
	m.progress(false)
	return 0
}

// progress logs keys, bytes, rate and ETA every 5 s (and when final).
func (m *migration) progress(final bool) {
	now := time.Now()
	if !final && now.Sub(m.lastLog) < 5*time.Second {
		return
	}
	m.lastLog = now
	secs := now.Sub(m.start).Seconds()
	rate := float64(m.scanned-m.scanned0) / secs
	eta := "unknown"
	if left := m.total - m.scanned; rate > 0 && left > 0 {
		eta = (time.Duration(float64(left)/rate) * time.Second).Round(time.Second).String()
	} else if left <= 0 {
		eta = "0s"
	}
	m.log.Printf("back-fill: %d of about %d keys; %d copies (waitlist included), %d bytes; %.0f keys/s, %.2f MB/s; ETA %s", m.scanned, m.total, m.keys, m.bytes, rate, float64(m.bytes-m.bytes0)/secs/1e6, eta)
}

// copyKeys copies a page of keys of db. With DUMP it takes two round
// trips for the page: PTTL and DUMP of every key from the source, then
// RESTORE (or DEL for a key gone) of every key on the target; the page's
// payloads are in memory together, so --count bounds it.
func (m *migration) copyKeys(ctx context.Context, db int, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if !m.useDump {
		for _, k := range keys {
			if err := m.copyKey(ctx, db, k); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
		return nil
	}
	src, tgt := m.srcDB(db), m.tgtDB(db)
	pttls := make([]*redis.DurationCmd, len(keys))
	dumps := make([]*redis.StringCmd, len(keys))
	p := src.Pipeline()
	for i, k := range keys {
		pttls[i] = p.PTTL(ctx, k)
		dumps[i] = p.Dump(ctx, k)
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return err
	}
	now := time.Now()
	w := tgt.Pipeline()
	var bytes int64
	copied := 0
	for i, k := range keys {
		if db == 0 && k == m.ckKey {
			continue
		}
		payload, err := dumps[i].Result()
		switch {
		case err == redis.Nil:
			w.Del(ctx, k)
			continue
		case err != nil:
			return fmt.Errorf("DUMP %q: %w", k, err)
		}
		args := []any{"RESTORE", k, 0, payload, "REPLACE"}
		if d := pttls[i].Val(); d > 0 {
			args[2] = now.Add(d).UnixMilli()
			args = append(args, "ABSTTL")
		}
		w.Do(ctx, args...)
		bytes += int64(len(k) + len(payload))
		copied++
	}
	cmds, err := w.Exec(ctx)
	if err != nil {
		for _, c := range cmds {
			if c.Err() != nil {
				return fmt.Errorf("%v: %w", c.Args()[:2], c.Err())
			}
		}
		return err
	}
	m.keys += int64(copied)
	m.bytes += bytes
	return nil
}

// copyKey makes the target's key in db what the source's is now: deleted
// when the source has none.
func (m *migration) copyKey(ctx context.Context, db int, key string) error {
	if db == 0 && key == m.ckKey {
		return nil
	}
	src, tgt := m.srcDB(db), m.tgtDB(db)
	if m.useDump {
		var dump *redis.StringCmd
		var pttl *redis.DurationCmd
		_, err := src.Pipelined(ctx, func(p redis.Pipeliner) error {
			pttl = p.PTTL(ctx, key)
			dump = p.Dump(ctx, key)
			return nil
		})
		if err != nil && err != redis.Nil {
			return err
		}
		payload, err := dump.Result()
		if err == redis.Nil {
			return tgt.Del(ctx, key).Err()
		}
		if err != nil {
			return err
		}
		abs := int64(0)
		if d := pttl.Val(); d > 0 {
			abs = time.Now().Add(d).UnixMilli()
		}
		args := []any{"RESTORE", key, abs, payload, "REPLACE"}
		if abs > 0 {
			args = append(args, "ABSTTL")
		}
		if err := tgt.Do(ctx, args...).Err(); err != nil {
			return err
		}
		m.keys++
		m.bytes += int64(len(key) + len(payload))
		return nil
	}
	n, err := copyTyped(ctx, src, tgt, key)
	if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		// The key changed type between TYPE and its reads: that change
		// was notified too, so the key is (or will be) in the waitlist;
		// make sure of it and go on.
		m.mu.Lock()
		if m.dirty[db] == nil {
			m.dirty[db] = map[string]struct{}{}
		}
		if _, seen := m.dirty[db][key]; !seen {
			m.dirty[db][key] = struct{}{}
			m.nDirty++
		}
		m.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	if n >= 0 {
		m.keys++
		m.bytes += int64(len(key)) + n
	}
	return nil
}

// page is how many elements a type-wise copy reads and writes at once, so
// that a big key never sits whole in memory.
const page = 1000

// copyTyped copies one key with ordinary reads and writes; it returns the
// bytes of values copied, -1 when the key is gone (and deleted on the
// target). A stream's entries, last ID and counters are copied, and its
// groups' last delivered IDs; not its pending entries or consumers.
func copyTyped(ctx context.Context, src, tgt *redis.Client, key string) (int64, error) {
	typ, err := src.Type(ctx, key).Result()
	if err != nil {
		return 0, err
	}
	pttl, err := src.PTTL(ctx, key).Result()
	if err != nil {
		return 0, err
	}
	// The deadline as of the read, not of the end of the copy: a large
	// value (or a busy machine) would otherwise move it later.
	deadline := time.Now().Add(pttl)
	if err := tgt.Del(ctx, key).Err(); err != nil {
		return 0, err
	}
	var size int64
	switch typ {
	case "none":
		return -1, nil
	case "string":
		v, err := src.Get(ctx, key).Result()
		if err == redis.Nil {
			return -1, nil
		}
		if err != nil {
			return 0, err
		}
		if err := tgt.Set(ctx, key, v, 0).Err(); err != nil {
			return 0, err
		}
		size = int64(len(v))
	case "list":
		for start := int64(0); ; start += page {
			v, err := src.LRange(ctx, key, start, start+page-1).Result()
			if err != nil {
				return 0, err
			}
			if len(v) == 0 {
				break
			}
			args := make([]any, len(v))
			for i, s := range v {
				args[i] = s
				size += int64(len(s))
			}
			if err := tgt.RPush(ctx, key, args...).Err(); err != nil {
				return 0, err
			}
		}
	case "set", "hash":
		var cursor uint64
		for {
			var v []string
			var err error
			if typ == "set" {
				v, cursor, err = src.SScan(ctx, key, cursor, "", page).Result()
			} else {
				v, cursor, err = src.HScan(ctx, key, cursor, "", page).Result()
			}
			if err != nil {
				return 0, err
			}
			if len(v) > 0 {
				args := make([]any, len(v))
				for i, s := range v {
					args[i] = s
					size += int64(len(s))
				}
				if typ == "set" {
					err = tgt.SAdd(ctx, key, args...).Err()
				} else {
					err = tgt.HSet(ctx, key, args...).Err()
				}
				if err != nil {
					return 0, err
				}
			}
			if cursor == 0 {
				break
			}
		}
	case "zset":
		for start := int64(0); ; start += page {
			v, err := src.ZRangeWithScores(ctx, key, start, start+page-1).Result()
			if err != nil {
				return 0, err
			}
			if len(v) == 0 {
				break
			}
			for _, z := range v {
				size += int64(len(z.Member.(string))) + 8
			}
			if err := tgt.ZAdd(ctx, key, v...).Err(); err != nil {
				return 0, err
			}
		}
	case "stream":
		n, err := copyStream(ctx, src, tgt, key)
		if err != nil {
			return 0, err
		}
		size = n
	default:
		return 0, fmt.Errorf("type %s cannot be copied without DUMP", typ)
	}
	if pttl > 0 {
		if err := tgt.PExpireAt(ctx, key, deadline).Err(); err != nil {
			return 0, err
		}
	}
	return size, nil
}

func copyStream(ctx context.Context, src, tgt *redis.Client, key string) (int64, error) {
	var size int64
	start := "-"
	for {
		raw, err := src.Do(ctx, "XRANGE", key, start, "+", "COUNT", page).Slice()
		if err != nil {
			return 0, err
		}
		if len(raw) == 0 {
			break
		}
		p := tgt.Pipeline()
		var last string
		for _, e := range raw {
			entry, _ := e.([]any)
			if len(entry) != 2 {
				return 0, fmt.Errorf("unexpected XRANGE entry %v", e)
			}
			last, _ = entry[0].(string)
			fields, _ := entry[1].([]any)
			args := append([]any{"XADD", key, last}, fields...)
			for _, f := range fields {
				s, _ := f.(string)
				size += int64(len(s))
			}
			p.Do(ctx, args...)
		}
		if _, err := p.Exec(ctx); err != nil {
			return 0, err
		}
		if len(raw) < page {
			break
		}
		start = "(" + last
	}
	info, err := src.XInfoStreamFull(ctx, key, 1).Result()
	if err != nil {
		return 0, err
	}
	if info.Length == 0 {
		// XSETID needs the key: an empty stream is made by a group or
		// an entry added and deleted.
		if err := tgt.Do(ctx, "XADD", key, "0-1", "x", "").Err(); err != nil {
			return 0, err
		}
		if err := tgt.Do(ctx, "XDEL", key, "0-1").Err(); err != nil {
			return 0, err
		}
	}
	if err := tgt.Do(ctx, "XSETID", key, info.LastGeneratedID, "ENTRIESADDED", info.EntriesAdded, "MAXDELETEDID", info.MaxDeletedEntryID).Err(); err != nil {
		return 0, err
	}
	for _, g := range info.Groups {
		if err := tgt.Do(ctx, "XGROUP", "CREATE", key, g.Name, g.LastDeliveredID, "ENTRIESREAD", g.EntriesRead).Err(); err != nil {
			return 0, err
		}
		if err := copyGroup(ctx, src, tgt, key, g.Name); err != nil {
			return 0, err
		}
	}
	return size, nil
}

// copyGroup copies a group's consumers and pending entries: XCLAIM ...
// FORCE JUSTID with the entry's delivery count and time recreates each
// pending entry for its consumer, XGROUP CREATECONSUMER the consumers
// with none. Idle times of consumers are not carried over.
func copyGroup(ctx context.Context, src, tgt *redis.Client, key, group string) error {
	start := "-"
	for {
		pend, err := src.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: group, Start: start, End: "+", Count: page}).Result()
		if err != nil {
			return err
		}
		now := time.Now()
		p := tgt.Pipeline()
		for _, e := range pend {
			p.Do(ctx, "XCLAIM", key, group, e.Consumer, 0, e.ID, "TIME", now.Add(-e.Idle).UnixMilli(),
				"RETRYCOUNT", e.RetryCount, "FORCE", "JUSTID")
		}
		if len(pend) > 0 {
			if _, err := p.Exec(ctx); err != nil {
				return err
			}
		}
		if len(pend) < page {
			break
		}
		start = "(" + pend[len(pend)-1].ID
	}
	cs, err := src.XInfoConsumers(ctx, key, group).Result()
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := tgt.XGroupCreateConsumer(ctx, key, group, c.Name).Err(); err != nil {
			return err
		}
	}
	return nil
}

// prune deletes the keys the target holds in a migrated database that the
// source does not: keys deleted on the source before this run, or while an
// interrupted one was not running. A key created on the source meanwhile
// is in the waitlist and copied again.
func (m *migration) prune(ctx context.Context) error {
	dbs, err := m.allDatabases(ctx)
	if err != nil {
		return err
	}
	removed := 0
	for _, db := range dbs {
		var cursor uint64
		for {
			keys, next, err := m.tgtDB(db).Scan(ctx, cursor, "", m.count).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				p := m.srcDB(db).Pipeline()
				cmds := make([]*redis.IntCmd, len(keys))
				for i, k := range keys {
					cmds[i] = p.Exists(ctx, k)
				}
				if _, err := p.Exec(ctx); err != nil {
					return err
				}
				for i, k := range keys {
					if cmds[i].Val() == 0 && !(db == 0 && k == m.ckKey) {
						if err := m.tgtDB(db).Del(ctx, k).Err(); err != nil {
							return err
						}
						removed++
					}
				}
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
	}
	if removed > 0 {
		m.log.Printf("deleted %d keys on the target that the source does not hold", removed)
	}
	return nil
}

// allDatabases is databases and those the target holds keys in.
func (m *migration) allDatabases(ctx context.Context) ([]int, error) {
	dbs, err := m.databases(ctx)
	if err != nil || m.oneDB {
		return dbs, err
	}
	info, err := m.tgtDB(0).Info(ctx, "keyspace").Result()
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		if n, ok := strings.CutPrefix(name, "db"); ok {
			if db, err := strconv.Atoi(n); err == nil && !containsInt(dbs, db) {
				dbs = append(dbs, db)
			}
		}
	}
	return dbs, nil
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// verify compares every key of the migrated databases on both servers:
// type and value (read type by type), TTL within a second (sameDeadline); it prints each
// difference and returns 1 if there is one.
func (m *migration) verify(ctx context.Context, out io.Writer) int {
	dbs, err := m.allDatabases(ctx)
	if err != nil {
		m.log.Printf("verify: %v", err)
		return 1
	}
	diffs, checked := 0, 0
	report := func(db int, key, what string) {
		diffs++
		fmt.Fprintf(out, "difference: db %d key %q: %s\n", db, key, what)
	}
	seen := map[int]map[string]bool{}
	for _, db := range dbs {
		seen[db] = map[string]bool{}
		src, tgt := m.srcDB(db), m.tgtDB(db)
		var cursor uint64
		for {
			keys, next, err := src.Scan(ctx, cursor, "", m.count).Result()
			if err != nil {
				m.log.Printf("verify: %v", err)
				return 1
			}
			for _, k := range keys {
				seen[db][k] = true
				checked++
				want, err := keydesc.Describe(ctx, src, k)
				if err != nil {
					m.log.Printf("verify: db %d key %q on the source: %v", db, k, err)
					return 1
				}
				got, err := keydesc.Describe(ctx, tgt, k)
				if err != nil {
					m.log.Printf("verify: db %d key %q on the target: %v", db, k, err)
					return 1
				}
				if got != want {
					report(db, k, fmt.Sprintf("source %.200q, target %.200q", want, got))
					continue
				}
				if st, tt, ok := sameDeadline(ctx, src, tgt, k); !ok {
					report(db, k, fmt.Sprintf("TTL %v on the source, %v on the target", st, tt))
				}
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
		cursor = 0
		for {
			keys, next, err := tgt.Scan(ctx, cursor, "", m.count).Result()
			if err != nil {
				m.log.Printf("verify: %v", err)
				return 1
			}
			for _, k := range keys {
				if !seen[db][k] && !(db == 0 && k == m.ckKey) && src.Exists(ctx, k).Val() == 0 {
					report(db, k, "only on the target")
				}
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
	}
	m.log.Printf("verify: %d keys compared, %d differences", checked, diffs)
	if diffs > 0 {
		return 1
	}
	return 0
}

// sameDeadline reports whether key expires on both servers within a second
// of each other (or on neither), with the two TTLs read. The TTLs are read
// one after the other, so each is turned into a deadline by the local
// clock of its read, and the time each read took widens the second: on a
// busy machine the reads can be seconds apart.
func sameDeadline(ctx context.Context, src, tgt *redis.Client, key string) (st, tt time.Duration, ok bool) {
	read := func(c *redis.Client) (time.Duration, time.Time, time.Duration) {
		t0 := time.Now()
		d := c.PTTL(ctx, key).Val()
		took := time.Since(t0)
		return d, t0.Add(took / 2), took
	}
	st, sAt, sTook := read(src)
	tt, tAt, tTook := read(tgt)
	if st <= 0 || tt <= 0 { // no expiry, or none left: no deadline to compare
		d := st - tt
		return st, tt, d <= time.Second && d >= -time.Second
	}
	d := sAt.Add(st).Sub(tAt.Add(tt))
	slack := time.Second + sTook + tTook
	return st, tt, d <= slack && d >= -slack
}
