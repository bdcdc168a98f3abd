package cellar

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

func load(t *testing.T, args []string, environ ...string) (Config, error) {
	t.Helper()
	var usage strings.Builder
	return LoadConfig(args, environ, &usage)
}

func TestDefaults(t *testing.T) {
	cfg, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 6379 || cfg.Bind != "127.0.0.1" || cfg.DBPath() != "data/cellar.db" || cfg.Durability != "everysec" {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// The flush's window is sized from the memory bound unless set: a
// thirty-second of it between 16 MB and 64 MB, and four times that may
// wait; a value set is kept, and max_unflushed follows flush_bytes.
func TestFlushWindow(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		environ       []string
		bytes, unflus int64
	}{
		{[]string{"CELLAR_STORAGE__MAX_MEMORY=67108864"}, 16 * mb, 64 * mb},
		{[]string{"CELLAR_STORAGE__MAX_MEMORY=1073741824"}, 32 * mb, 128 * mb},
		{[]string{"CELLAR_STORAGE__MAX_MEMORY=8589934592"}, 64 * mb, 256 * mb},
		{[]string{"CELLAR_STORAGE__MAX_MEMORY=8589934592", "CELLAR_STORAGE__FLUSH_BYTES=2097152"}, 2 * mb, 8 * mb},
		{[]string{"CELLAR_STORAGE__MAX_MEMORY=67108864", "CELLAR_STORAGE__MAX_UNFLUSHED=1048576"}, 16 * mb, 1 * mb},
	} {
		cfg, err := load(t, nil, c.environ...)
		if err != nil {
			t.Fatal(err)
		}
		if b, u := cfg.FlushWindow(); b != c.bytes || u != c.unflus {
			t.Errorf("%v: flush_bytes %d, max_unflushed %d; want %d, %d", c.environ, b, u, c.bytes, c.unflus)
		}
	}
}

// Precedence: defaults < YAML < environment < flags.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("port: 7001\nloglevel: warn\nsqlite:\n  cache_kb: 100\ndurability: off\n"), 0o644)
	cfg, err := load(t, []string{"--config", path, "--durability", "always"},
		"CELLAR_PORT=7002", "CELLAR_SQLITE__CACHE_KB=200", "UNRELATED=1")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 7002 || cfg.SQLite.CacheKB != 200 || cfg.LogLevel != "warn" || cfg.Durability != "always" {
		t.Fatalf("precedence: %+v", cfg)
	}
	cfg, err = load(t, []string{"--port", "7003"}, "CELLAR_PORT=7002", "CELLAR_CONFIG="+path)
	if err != nil || cfg.Port != 7003 || cfg.LogLevel != "warn" {
		t.Fatalf("flag over env, CELLAR_CONFIG: %+v %v", cfg, err)
	}
	cfg, err = load(t, nil, "CELLAR_EXPIRY__INTERVAL=250ms")
	if err != nil || cfg.Expiry.Interval != 250*time.Millisecond {
		t.Fatalf("duration from env: %+v %v", cfg.Expiry, err)
	}
}

// Invalid values name the key and the reason, as a ConfigError (exit 2).
func TestInvalid(t *testing.T) {
	for _, c := range []struct {
		args    []string
		environ []string
		want    string
	}{
		{[]string{"--port", "70000"}, nil, "port: must be between 0 and 65535, not 70000"},
		{[]string{"--port", "abc"}, nil, "'port'"},
		{[]string{"--durability", "sometimes"}, nil, `durability: must be always, everysec or off, not "sometimes"`},
		{nil, []string{"CELLAR_MAXCLIENTS=0"}, "maxclients: must be at least 1, not 0"},
		{nil, []string{"CELLAR_NO_SUCH_KEY=1"}, "unknown key no_such_key"},
		{nil, []string{"CELLAR_STORAGE__FLUSH_BYTES=1000"}, "storage.flush_bytes: must be 0 (sized from storage.max_memory) or at least 1048576, not 1000"},
		{nil, []string{"CELLAR_OFFLOAD__MIN_WORKERS=9"}, "offload.min_workers"},
		{nil, []string{"CELLAR_BLOCKING__MAX_WAITERS_PER_KEY=0"}, "blocking.max_waiters_per_key: must be at least 1, not 0"},
		{nil, []string{"CELLAR_BLOCKING__MAX_TOTAL_WAITERS=-1"}, "blocking.max_total_waiters: must be at least 1, not -1"},
		{nil, []string{"CELLAR_BLOCKING__MAX_KEYS_PER_WAIT=0"}, "blocking.max_keys_per_wait: must be at least 1, not 0"},
		{nil, []string{"CELLAR_BLOCKING__WAKEUP_BATCH_SIZE=0"}, "blocking.wakeup_batch_size: must be at least 1, not 0"},
		{[]string{"--loglevel", "loud"}, nil, "loglevel: must be debug, info, warn or error"},
		{[]string{"--nosuchflag"}, nil, "unknown flag"},
		{[]string{"--config", "/nonexistent/cellar.yaml"}, nil, "config file /nonexistent/cellar.yaml"},
		{[]string{"extra"}, nil, `unexpected argument "extra"`},
	} {
		_, err := load(t, c.args, c.environ...)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: got %v, want a ConfigError containing %q", c.args, c.environ, err, c.want)
		}
	}
	if _, err := load(t, []string{"--help"}); !errors.Is(err, ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if _, err := load(t, []string{"--version"}); !errors.Is(err, ErrVersion) {
		t.Errorf("--version: %v", err)
	}
}

// deploy/cellar.yaml documents every key with its default value, so that
// the example file and the code cannot drift apart.
func TestExampleFileMatchesDefaults(t *testing.T) {
	k := koanf.New(".")
	if err := k.Load(file.Provider("deploy/cellar.yaml"), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	known := knownKeys()
	for key := range known {
		if !k.Exists(key) {
			t.Errorf("deploy/cellar.yaml does not document %q", key)
		}
	}
	for _, key := range k.Keys() {
		if !known[key] {
			t.Errorf("deploy/cellar.yaml has %q, which Cellar does not know", key)
		}
	}
	cfg, err := load(t, []string{"--config", "deploy/cellar.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.File = "" // where it came from, not a setting
	if !reflect.DeepEqual(cfg, DefaultConfig()) {
		t.Errorf("deploy/cellar.yaml's values differ from the defaults:\n file: %+v\n code: %+v", cfg, DefaultConfig())
	}
}

// The security settings from a YAML file: users, the command policy (a map
// whose keys are command names), PROXY protocol balancers, timeout.
func TestSecuritySettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte(`users:
  - "app on >pw ~app:* +@read"
  - "user ops on >o +@all ~*"
rename_commands:
  flushall: ""
  config: "cfg-3f9a"
protected_mode: false
proxy_protocol: true
proxy_protocol_from: ["10.0.0.0/8", "192.0.2.7"]
timeout: 30s
`), 0o644)
	cfg, err := load(t, []string{"--config", path}, "CELLAR_RENAME_COMMANDS__KEYS=")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"flushall": "", "config": "cfg-3f9a", "keys": ""}
	if !reflect.DeepEqual(cfg.RenameCommands, want) || len(cfg.Users) != 2 || cfg.Users[1] != "user ops on >o +@all ~*" ||
		cfg.ProtectedMode || !cfg.ProxyProtocol || len(cfg.ProxyProtocolFrom) != 2 || cfg.Timeout != 30*time.Second {
		t.Fatalf("security settings: %+v", cfg)
	}
	os.WriteFile(path, []byte("timeout: 1500ms\n"), 0o644)
	if _, err := load(t, []string{"--config", path}); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("timeout 1500ms: %v", err)
	}
}
