package cellar

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"go.yaml.in/yaml/v3"
)

// CONFIG REWRITE: the settings CONFIG SET can change are written back into
// the YAML file Cellar was started with. The file is edited as a YAML
// document tree, so its comments, its order and the keys CONFIG does not
// touch stay as they were; a key the file has is updated, and one it lacks
// is added only when its value differs from the default. The new file
// replaces the old one atomically (written beside it, fsynced, renamed,
// the directory fsynced), keeping its permissions.

// rewriteKey maps a CONFIG parameter to its key in the file.
type rewriteKey struct {
	param string
	key   string // koanf path, "blocking.max_waiters_per_key"
	// yamlValue turns the CONFIG value into the file's; nil: unchanged.
	yamlValue func(string) (string, error)
	tag       string // "!!int" or "!!str"
}

func millisToDuration(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", err
	}
	return (time.Duration(n) * time.Millisecond).String(), nil
}

func secondsToDuration(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", err
	}
	return (time.Duration(n) * time.Second).String(), nil
}

func yesNoToBool(v string) (string, error) {
	switch v {
	case "yes":
		return "true", nil
	case "no":
		return "false", nil
	}
	return "", fmt.Errorf("not yes or no: %q", v)
}

var rewriteKeys = []rewriteKey{
	{"durability", "durability", nil, "!!str"},
	{"replicaof", "replicaof", nil, "!!str"},
	{"requirepass", "requirepass", nil, "!!str"},
	{"maxmemory-clients", "maxmemory_clients", nil, "!!int"},
	{"notify-keyspace-events", "notify_keyspace_events", nil, "!!str"},
	{"tracking-table-max-keys", "tracking_table_max_keys", nil, "!!int"},
	{"blocking-max-waiters-per-key", "blocking.max_waiters_per_key", nil, "!!int"},
	{"blocking-max-total-waiters", "blocking.max_total_waiters", nil, "!!int"},
	{"blocking-max-keys-per-wait", "blocking.max_keys_per_wait", nil, "!!int"},
	{"blocking-wakeup-batch-size", "blocking.wakeup_batch_size", nil, "!!int"},
	{"busy-reply-threshold", "lua.busy_reply_threshold", millisToDuration, "!!str"},
	{"sqlite-max-page-count", "sqlite.max_page_count", nil, "!!int"},
	{"slowlog-log-slower-than", "slowlog.log_slower_than", nil, "!!int"},
	{"slowlog-max-len", "slowlog.max_len", nil, "!!int"},
	{"latency-monitor-threshold", "latency_monitor_threshold", nil, "!!int"},
	{"repl-diskless-sync", "master.diskless_sync", yesNoToBool, "!!bool"},
	{"repl-diskless-sync-delay", "master.diskless_sync_delay", secondsToDuration, "!!str"},
	{"repl-diskless-sync-max-replicas", "master.diskless_sync_max_replicas", nil, "!!int"},
	{"shutdown-timeout", "master.shutdown_wait", secondsToDuration, "!!str"},
	{"replica-announce-ip", "replica.announce_ip", nil, "!!str"},
}

// rewriteConfig writes values (CONFIG's current values by parameter name)
// into path.
func rewriteConfig(path string, values map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	if doc.Kind == 0 { // an empty file
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("%s is not a YAML mapping", path)
	}
	defaults := koanf.New(".")
	defaults.Load(structs.Provider(DefaultConfig(), "koanf"), nil)
	for _, rk := range rewriteKeys {
		v, ok := values[rk.param]
		if !ok {
			continue
		}
		if rk.yamlValue != nil {
			if v, err = rk.yamlValue(v); err != nil {
				return fmt.Errorf("%s: %w", rk.param, err)
			}
		}
		def := fmt.Sprint(defaults.Get(rk.key))
		setYAML(doc.Content[0], strings.Split(rk.key, "."), v, rk.tag, v != def)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	enc.Close()
	return replaceFile(path, buf.Bytes())
}

// setYAML sets the scalar at path under m to v; a missing key (and the
// mappings leading to it) is added only if add.
func setYAML(m *yaml.Node, path []string, v, tag string, add bool) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != path[0] {
			continue
		}
		val := m.Content[i+1]
		if len(path) > 1 {
			if val.Kind == yaml.MappingNode {
				setYAML(val, path[1:], v, tag, add)
			}
			return
		}
		if val.Kind == yaml.ScalarNode && val.Value == v {
			return // unchanged: keep its style
		}
		val.Kind, val.Tag, val.Value, val.Style = yaml.ScalarNode, tag, v, 0
		val.Content = nil
		return
	}
	if !add {
		return
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[0]}
	if len(path) == 1 {
		m.Content = append(m.Content, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v})
		return
	}
	sub := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, key, sub)
	setYAML(sub, path[1:], v, tag, add)
}

// replaceFile replaces path with data atomically, keeping its mode.
func replaceFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".rewrite-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
