package tests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/cellar-db/cellar/internal/wait"
)

// TestAsynq runs asynq (github.com/hibiken/asynq), whose broker is Lua
// scripts over lists, sorted sets and hashes, against Cellar: its own
// client enqueues and its own server processes plain, scheduled, unique
// and retried tasks; every task's outcome and stored result is checked.
func TestAsynq(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	opt := asynq.RedisClientOpt{Addr: s.addr}
	client := asynq.NewClient(opt)
	defer client.Close()

	var mu sync.Mutex
	done := map[string]string{} // payload -> how it ended
	attempts := map[string]int{}
	handler := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		p := string(task.Payload())
		mu.Lock()
		attempts[p]++
		n := attempts[p]
		mu.Unlock()
		if task.Type() == "flaky" && n == 1 {
			return errors.New("first attempt fails")
		}
		if _, err := task.ResultWriter().Write([]byte("result of " + p)); err != nil {
			return err
		}
		mu.Lock()
		done[p] = fmt.Sprintf("%s after %d attempt(s)", task.Type(), n)
		mu.Unlock()
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:              4,
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 50 * time.Millisecond },
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.WarnLevel,
	})
	if err := srv.Start(handler); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()

	var ids []string
	enqueue := func(task *asynq.Task, opts ...asynq.Option) *asynq.TaskInfo {
		t.Helper()
		info, err := client.Enqueue(task, append(opts, asynq.Retention(time.Hour))...)
		if err != nil {
			t.Fatalf("enqueue %s: %v", task.Payload(), err)
		}
		ids = append(ids, info.ID)
		return info
	}
	for i := range 20 {
		enqueue(asynq.NewTask("plain", []byte(fmt.Sprint("plain-", i))))
	}
	enqueue(asynq.NewTask("scheduled", []byte("scheduled-1")), asynq.ProcessIn(300*time.Millisecond))
	enqueue(asynq.NewTask("flaky", []byte("flaky-1")), asynq.MaxRetry(3))
	enqueue(asynq.NewTask("unique", []byte("unique-1")), asynq.Unique(time.Minute))
	if _, err := client.Enqueue(asynq.NewTask("unique", []byte("unique-1")), asynq.Unique(time.Minute)); !errors.Is(err, asynq.ErrDuplicateTask) {
		t.Fatalf("a duplicate unique task: %v, want ErrDuplicateTask", err)
	}

	want := 23
	wait.For(t, 30*time.Second, "every task to be processed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == want
	})
	mu.Lock()
	for i := range 20 {
		p := fmt.Sprint("plain-", i)
		if done[p] != "plain after 1 attempt(s)" {
			t.Errorf("%s: %q", p, done[p])
		}
	}
	for p, w := range map[string]string{
		"scheduled-1": "scheduled after 1 attempt(s)",
		"flaky-1":     "flaky after 2 attempt(s)",
		"unique-1":    "unique after 1 attempt(s)",
	} {
		if done[p] != w {
			t.Errorf("%s: %q, want %q", p, done[p], w)
		}
	}
	mu.Unlock()

	// The results are stored with the completed tasks.
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	// (Inspector.GetQueueInfo would need MEMORY USAGE, which Cellar does
	// not have; GetTaskInfo is asynq's own script over the task's hash.)
	for _, id := range ids {
		wait.For(t, 10*time.Second, "task "+id+" to be completed", func() bool {
			info, err := insp.GetTaskInfo("default", id)
			return err == nil && info.State == asynq.TaskStateCompleted
		})
	}
	for _, id := range ids {
		info, err := insp.GetTaskInfo("default", id)
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		if info.State != asynq.TaskStateCompleted || string(info.Result) != "result of "+string(info.Payload) {
			t.Errorf("task %s (%s): state %v, result %q", id, info.Payload, info.State, info.Result)
		}
	}
}
