package tests

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
)

// Scripting's rules that a command file cannot show (compat/scripting.txt
// has the replies): locks under contention, atomicity, libraries across a
// restart, -BUSY and SCRIPT KILL while a script runs.

// releaseScript is the lock recipe's release: delete the key only if it
// still holds our token.
const releaseScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// TestScriptLockUnderContention: clients take a lock with SET NX PX and
// release it with the compare-and-delete script; never two holders at
// once, every release of a held lock succeeds, and a stale token never
// deletes another holder's lock.
func TestScriptLockUnderContention(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	release := redis.NewScript(releaseScript)
	var holders, maxHolders, acquired atomic.Int64
	const workers, rounds = 8, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.client()
			for i := 0; i < rounds; {
				token := fmt.Sprintf("w%d-%d", w, i)
				ok, err := c.SetNX(ctx, "lock", token, 10*time.Second).Result()
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					// A stale holder's release must not free the lock.
					if n, err := release.Run(ctx, c, []string{"lock"}, "not-the-holder").Int(); err != nil || n != 0 {
						errs <- fmt.Errorf("a wrong token released the lock: %d %v", n, err)
						return
					}
					continue
				}
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				c.Incr(ctx, "work")
				holders.Add(-1)
				if n, err := release.Run(ctx, c, []string{"lock"}, token).Int(); err != nil || n != 1 {
					errs <- fmt.Errorf("release of a held lock: %d %v", n, err)
					return
				}
				acquired.Add(1)
				i++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := maxHolders.Load(); m != 1 {
		t.Fatalf("at most one holder at a time, saw %d", m)
	}
	c := s.client()
	if got, _ := c.Get(ctx, "work").Int64(); got != workers*rounds || acquired.Load() != workers*rounds {
		t.Fatalf("work = %d, acquired = %d, want %d", got, acquired.Load(), workers*rounds)
	}
	if n, _ := c.Exists(ctx, "lock").Result(); n != 0 {
		t.Fatal("the lock is still held")
	}
}

// TestScriptAtomicity: a script's read-modify-write runs as one step; many
// clients incrementing through GET + SET in Lua lose no update.
func TestScriptAtomicity(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	incr := redis.NewScript(`local v = tonumber(redis.call('get', KEYS[1]) or '0'); redis.call('set', KEYS[1], v + 1); return v + 1`)
	var wg sync.WaitGroup
	const workers, n = 8, 100
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.client()
			for range n {
				if err := incr.Run(ctx, c, []string{"counter"}).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got, _ := s.client().Get(ctx, "counter").Int(); got != workers*n {
		t.Fatalf("counter = %d, want %d", got, workers*n)
	}
}

// TestScriptWritesSurviveRestart: a script's writes and a loaded library
// survive a restart (the script's effects are replayed from the redo log
// or were flushed; the library is stored in the database); cached scripts
// do not (SCRIPT LOAD is a cache, as in Redis).
func TestScriptWritesSurviveRestart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	ctx := context.Background()
	c := s.client()
	script := `for i = 1, 50 do redis.call('rpush', KEYS[1], i) end; redis.call('set', KEYS[2], 'done'); return redis.call('llen', KEYS[1])`
	if n, err := c.Eval(ctx, script, []string{"list", "flag"}).Int(); err != nil || n != 50 {
		t.Fatalf("eval: %d %v", n, err)
	}
	sha, err := c.ScriptLoad(ctx, "return 'cached'").Result()
	if err != nil {
		t.Fatal(err)
	}
	lib := "#!lua name=limiter\n" +
		"redis.register_function('hit', function(keys, args)\n" +
		"  local n = redis.call('incr', keys[1])\n" +
		"  if n == 1 then redis.call('expire', keys[1], args[1]) end\n" +
		"  return n\n" +
		"end)"
	if name, err := c.FunctionLoad(ctx, lib).Result(); err != nil || name != "limiter" {
		t.Fatalf("function load: %q %v", name, err)
	}
	if n, err := c.FCall(ctx, "hit", []string{"rl"}, 60).Int(); err != nil || n != 1 {
		t.Fatalf("fcall: %d %v", n, err)
	}
	s.restart()
	c = s.client()
	if n, _ := c.LLen(ctx, "list").Result(); n != 50 {
		t.Fatalf("after restart: llen = %d", n)
	}
	if v, _ := c.Get(ctx, "flag").Result(); v != "done" {
		t.Fatalf("after restart: flag = %q", v)
	}
	if n, err := c.FCall(ctx, "hit", []string{"rl"}, 60).Int(); err != nil || n != 2 {
		t.Fatalf("fcall after restart: %d %v", n, err)
	}
	if ttl, _ := c.TTL(ctx, "rl").Result(); ttl <= 0 {
		t.Fatalf("the function's EXPIRE was lost: ttl %v", ttl)
	}
	if ex, _ := c.ScriptExists(ctx, sha).Result(); len(ex) != 1 || ex[0] {
		t.Fatalf("SCRIPT LOAD's cache survived a restart: %v", ex)
	}
	r := s.raw()
	r.expect(errr("NOSCRIPT No matching script. Please use EVAL."), "EVALSHA", sha, "0")
	// FUNCTION DUMP and RESTORE carry the library over.
	dump, err := c.FunctionDump(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	c.FunctionFlush(ctx)
	if err := c.FunctionRestore(ctx, dump).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.FCall(ctx, "hit", []string{"rl"}, 60).Int(); err != nil || n != 3 {
		t.Fatalf("fcall after restore: %d %v", n, err)
	}
}

// TestScriptBusy: while a script runs past busy-reply-threshold, other
// clients get -BUSY from the loops; SCRIPT KILL stops a script that has not
// written (its caller gets the killed error); one that wrote is
// UNKILLABLE, and FUNCTION KILL does not stop an EVAL script. (Redis's
// replies were taken from redis-server 7.0 by hand: its timing cannot be
// replayed by the compat runner.)
func TestScriptBusy(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.Lua.BusyReplyThreshold = 50 * time.Millisecond })
	needCellar(t, s)
	const busyEval = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"

	runner := s.raw()
	runner.send(encode("EVAL", "while true do end", "0"))
	other := s.raw()
	// A command sent before the threshold passes waits for the script
	// (the actor runs one thing at a time); one sent after is answered
	// -BUSY at once.
	busy := func() bool { b, _ := s.srv.Scripts().Busy(); return b }
	wait.For(t, 10*time.Second, "the script to pass the threshold", busy)
	other.expect(busyEval, "PING")
	other.expect(busyEval, "GET", "k")
	other.expect(busyEval, "FUNCTION", "KILL")  // as Redis: the running script is EVAL's
	other.expect(busyEval, "FUNCTION", "STATS") // which FUNCTION STATS does not report
	other.expect(status("OK"), "SCRIPT", "KILL")
	if got := runner.read(); !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL... script: 694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7, on @user_script:1.") {
		t.Fatalf("the killed script's caller got %q", got)
	}
	other.expect(status("PONG"), "PING")
	other.expect(errr("NOTBUSY No scripts in execution right now."), "SCRIPT", "KILL")

	// A function is killed with FUNCTION KILL (SCRIPT KILL names it).
	const busyFunction = "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
	other.expect(bulk("spin"), "FUNCTION", "LOAD", "#!lua name=spin\nredis.register_function('spin', function() while true do end end)")
	runner.send(encode("FCALL", "spin", "0"))
	wait.For(t, 10*time.Second, "the function to pass the threshold", busy)
	other.expect(busyFunction, "PING")
	other.expect(busyFunction, "SCRIPT", "KILL")
	other.expect(status("OK"), "FUNCTION", "KILL")
	if got := runner.read(); got != errr("ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.") {
		t.Fatalf("the killed function's caller got %q", got)
	}

	// A script that wrote cannot be killed; SHUTDOWN NOSAVE's abort (here
	// without the shutdown) stops it and throws its writes away. From the
	// abort on the server answers nobody (as Redis, which exits then), so
	// what the script wrote is looked for after a restart.
	runner.send(encode("EVAL", "redis.call('set','w','1') local i = 0 while true do i = i + 1 end", "0"))
	wait.For(t, 10*time.Second, "the second script to pass the threshold", busy)
	other.expect(busyEval, "PING")
	other.expect(errr("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."), "SCRIPT", "KILL")
	s.srv.Scripts().Abort()
	wait.For(t, 10*time.Second, "the aborted script to end", func() bool { return s.srv.Scripts().Conn() == 0 })
	// Its round was thrown away: the write it made is not there after a
	// restart.
	s.restart()
	s.raw().expect("$-1\r\n", "GET", "w")
}

// TestScriptCacheBound: the compiled script cache keeps at most
// lua.max_scripts scripts; the oldest goes first.
func TestScriptCacheBound(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.Lua.MaxScripts = 3 })
	needCellar(t, s)
	ctx := context.Background()
	c := s.client()
	var shas []string
	for i := range 5 {
		sha, err := c.ScriptLoad(ctx, "return "+strconv.Itoa(i)).Result()
		if err != nil {
			t.Fatal(err)
		}
		shas = append(shas, sha)
	}
	ex, err := c.ScriptExists(ctx, shas...).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, false, true, true, true}; fmt.Sprint(ex) != fmt.Sprint(want) {
		t.Fatalf("exists = %v, want %v", ex, want)
	}
	if err := c.EvalSha(ctx, shas[0], nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Fatalf("evicted script: %v", err)
	}
	// go-redis's Script falls back to EVAL and the script runs again.
	if n, err := redis.NewScript("return 0").Run(ctx, c, nil).Int(); err != nil || n != 0 {
		t.Fatalf("run after eviction: %d %v", n, errors.Unwrap(err))
	}
}

// TestScriptCrashAllOrNothing kills the server (SIGKILL) while clients run
// scripts that each write several keys, restarts it, and checks that every
// acknowledged script's writes are all there and that no script's writes
// are there in part: a script is one record of the redo log, replayed
// whole (its commands, not its Lua) or not at all.
func TestScriptCrashAllOrNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--dir", dir}
	const writers, perScript = 8, 5
	script := redis.NewScript(`for i = 1, tonumber(ARGV[2]) do redis.call('set', ARGV[1] .. ':' .. i, ARGV[1]) end
redis.call('incr', 'scripts')
return 1`)
	acked := make([]atomic.Int64, writers)
	for i := range acked {
		acked[i].Store(-1)
	}
	next := make([]int64, writers)
	// unacked: scripts sent but not acknowledged when a kill landed; each
	// may be there (whole) or not.
	unacked := make([]map[int64]bool, writers)
	for i := range unacked {
		unacked[i] = map[int64]bool{}
	}
	replays := 0
	for k := 0; k < 2; k++ {
		p := runCellar(t, true, args...)
		var total atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
				defer c.Close()
				for n := next[w]; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					next[w] = n + 1 // sent: it may be in the log when the kill lands
					if err := script.Run(ctx, c, nil, fmt.Sprintf("w%d:%d", w, n), perScript).Err(); err != nil {
						return
					}
					acked[w].Store(n)
					total.Add(1)
				}
			}()
		}
		waitFor(t, 60*time.Second, "scripts before the kill", func() bool { return total.Load() >= int64(300+k*200) })
		p.kill9()
		close(stop)
		wg.Wait()
		for w := range writers {
			for n := acked[w].Load() + 1; n < next[w]; n++ {
				unacked[w][n] = true
			}
		}
		p = runCellar(t, true, args...)
		if strings.Contains(p.stderr.String(), "replayed the redo log") {
			replays++
		}
		c := redis.NewClient(&redis.Options{Addr: p.addr})
		var present int64
		for w := range writers {
			for n := int64(0); n < next[w]; n++ {
				prefix := fmt.Sprintf("w%d:%d", w, n)
				keys := make([]string, perScript)
				for i := range keys {
					keys[i] = fmt.Sprintf("%s:%d", prefix, i+1)
				}
				got, err := c.Exists(ctx, keys...).Result()
				if err != nil {
					t.Fatal(err)
				}
				if got != 0 && got != perScript {
					t.Fatalf("kill %d: script %s left %d of its %d writes", k+1, prefix, got, perScript)
				}
				if got == 0 && !unacked[w][n] {
					t.Fatalf("kill %d: acknowledged script %s lost (writer %d: %d acknowledged, %d sent)", k+1, prefix, w, acked[w].Load(), next[w])
				}
				if got == perScript {
					present++
				}
			}
		}
		if n, _ := c.Get(ctx, "scripts").Int64(); n != present {
			t.Fatalf("kill %d: the scripts' counter says %d, their keys say %d", k+1, n, present)
		}
		c.Close()
		p.kill9()
	}
	if replays == 0 {
		t.Fatal("no restart replayed the redo log: the kills did not test it")
	}
}

// TestScriptShutdownNoSave: SHUTDOWN NOSAVE while a script that wrote is
// busy stops the script, throws its writes away and stops the server;
// what was acknowledged before stays.
func TestScriptShutdownNoSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--dir", dir}
	p := runCellarEnv(t, []string{"CELLAR_LUA__BUSY_REPLY_THRESHOLD=50ms"}, true, args...)
	before := dialRaw(t, p.addr)
	before.expect(status("OK"), "SET", "kept", "1")
	runner := dialRaw(t, p.addr)
	runner.send(encode("EVAL", "redis.call('set', 'lost', '1') while true do end", "0"))
	other := dialRaw(t, p.addr)
	const busyEval = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	// The first PING may reach the actor before the threshold and wait
	// for the script; a fresh connection per try keeps each try short.
	wait.For(t, 20*time.Second, "-BUSY", func() bool {
		c, err := dialAddr(p.addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(200 * time.Millisecond))
		c.Write(encode("PING"))
		buf := make([]byte, 128)
		n, _ := c.Read(buf)
		return string(buf[:n]) == busyEval
	})
	other.send(encode("SHUTDOWN", "NOSAVE"))
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.stderr.String())
	}
	p = runCellar(t, true, args...)
	c := dialRaw(t, p.addr)
	c.expect(bulk("1"), "GET", "kept")
	c.expect("$-1\r\n", "GET", "lost")
}

// TestScriptInfo: INFO memory counts cached scripts, functions and
// libraries.
func TestScriptInfo(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	c := s.client()
	c.ScriptLoad(ctx, "return 1")
	c.ScriptLoad(ctx, "return 2")
	c.FunctionLoad(ctx, "#!lua name=l\nredis.register_function('a', function() return 1 end)\nredis.register_function('b', function() return 2 end)")
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"number_of_cached_scripts:2\r\n", "number_of_functions:2\r\n", "number_of_libraries:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO memory lacks %q:\n%s", want, info)
		}
	}
}

// TestFunctionRestoreWhole: a FUNCTION RESTORE whose second library
// collides with a function already loaded restores nothing, on Cellar as
// on Redis; each server restores its own DUMP (Redis compresses its
// payload, Cellar does not), and the error and the libraries after are
// compared.
func TestFunctionRestoreWhole(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	run := func(addr string) (string, string) {
		r := dialRaw(t, addr)
		r.do("FUNCTION", "FLUSH")
		r.do("FUNCTION", "LOAD", "#!lua name=r1\nredis.register_function('r1f', function() return 1 end)")
		r.do("FUNCTION", "LOAD", "#!lua name=r2\nredis.register_function('r2f', function() return 2 end)")
		dump := r.do("FUNCTION", "DUMP")
		payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
		r.do("FUNCTION", "FLUSH")
		r.do("FUNCTION", "LOAD", "#!lua name=r0\nredis.register_function('r2f', function() return 0 end)")
		restored := r.do("FUNCTION", "RESTORE", payload)
		return restored, r.do("FUNCTION", "LIST")
	}
	gotErr, gotList := run(s.addr)
	wantErr, wantList := run(startRedis(t))
	if gotErr != wantErr || gotList != wantList {
		t.Fatalf("cellar: %q %q\nredis:  %q %q", gotErr, gotList, wantErr, wantList)
	}
	if !strings.HasPrefix(gotErr, "-") {
		t.Fatalf("the colliding restore succeeded: %q", gotErr)
	}
}

// TestFunctionLoadCrash: FUNCTION LOAD and DELETE acknowledged just
// before a kill -9 are there after the restart (replayed from the redo
// log: the library's row is written by the replayed command).
func TestFunctionLoadCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--dir", dir}
	p := runCellar(t, true, args...)
	r := dialRaw(t, p.addr)
	r.expect(bulk("keep"), "FUNCTION", "LOAD", "#!lua name=keep\nredis.register_function('kept', function() return 'kept' end)")
	r.expect(bulk("gone"), "FUNCTION", "LOAD", "#!lua name=gone\nredis.register_function('dropped', function() return 1 end)")
	r.expect(status("OK"), "FUNCTION", "DELETE", "gone")
	r.expect(bulk("kept"), "FCALL", "kept", "0")
	p.kill9()
	p = runCellar(t, true, args...)
	r = dialRaw(t, p.addr)
	r.expect(bulk("kept"), "FCALL", "kept", "0")
	r.expect(errr("ERR Function not found"), "FCALL", "dropped", "0")
}

// TestScriptStackOverflow: a script that recurses past Lua's limit fails
// alone; the server and the next script go on.
func TestScriptStackOverflow(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	got := r.do("EVAL", "local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(100000)", "0")
	if !strings.HasPrefix(got, "-ERR ") || !strings.Contains(got, "overflow") {
		t.Fatalf("deep recursion: %q", got)
	}
	r.expect(integer(1), "EVAL", "return 1", "0")
	r.expect(status("PONG"), "PING")
}

// TestScriptBusyUnderBacklog: the script's own request keeps the actor's
// backlog above max_backlog while it runs; other clients are still
// answered -BUSY (the loops answer for the actor), not left waiting.
func TestScriptBusyUnderBacklog(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.Lua.BusyReplyThreshold = 50 * time.Millisecond
		c.MaxBacklog = 1 << 20
	})
	needCellar(t, s)
	runner := s.raw()
	runner.send(encode("EVAL", "while true do end", "0", strings.Repeat("x", 2<<20)))
	busy := func() bool { b, _ := s.srv.Scripts().Busy(); return b }
	wait.For(t, 10*time.Second, "the script to pass the threshold", busy)
	other := s.raw()
	other.expect("-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n", "PING")
	other.expect(status("OK"), "SCRIPT", "KILL")
	if got := runner.read(); !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("the killed script's caller got %q", got)
	}
	other.expect(status("PONG"), "PING")
}
