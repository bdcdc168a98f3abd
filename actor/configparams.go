package actor

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The parameters Redis 7.0 has, for CONFIG GET and CONFIG SET.
//
// The facts (names, aliases, types, defaults, ranges, enum values and which
// ones are immutable, protected or hidden) are those of the standardConfig
// table in Redis 7.0's src/config.c (static_configs), TLS included, as a
// server started without a configuration file reports them. Cellar applies
// the ones its own Params name (server.go's params and the owner's
// Config.Params); every other one is stored and reported as Redis would,
// validated as Redis validates it, and has no effect. To make one take
// effect, add a Param of the same name: it replaces the stored one, and the
// table still gives it its alias and Redis's immutable/protected rules.

type paramKind uint8

const (
	pBool    paramKind = iota // yes | no
	pString                   // any string (empty is "not set")
	pEnum                     // one of enum, case-insensitive
	pInt                      // an integer between min and max
	pMemory                   // a size (bytes or k, kb, m, mb, g, gb) between min and max
	pSpecial                  // a value with its own syntax (validateSpecial)
)

type paramFlags uint8

const (
	immutable paramFlags = 1 << iota // fixed at start: "can't set immutable config"
	protected                        // refused while enable-protected-configs is no (its default)
	hidden                           // CONFIG GET reports it only when named exactly
)

// redisParam is one parameter of Redis 7.0's configuration.
type redisParam struct {
	name, alias string
	kind        paramKind
	flags       paramFlags
	def         string
	min         int64
	max         uint64
	enum        []string
}

const (
	intMax   = math.MaxInt32
	intMin   = math.MinInt32
	longMax  = math.MaxInt64
	uintMax  = math.MaxUint32
	ullongMx = math.MaxUint64
)

func boolP(name, alias, def string, f paramFlags) redisParam {
	return redisParam{name: name, alias: alias, kind: pBool, def: def, flags: f}
}

func strP(name, alias, def string, f paramFlags) redisParam {
	return redisParam{name: name, alias: alias, kind: pString, def: def, flags: f}
}

func enumP(name, def string, f paramFlags, values ...string) redisParam {
	return redisParam{name: name, kind: pEnum, def: def, flags: f, enum: values}
}

func intP(name, alias string, min int64, max uint64, def int64, f paramFlags) redisParam {
	return redisParam{name: name, alias: alias, kind: pInt, min: min, max: max, def: strconv.FormatInt(def, 10), flags: f}
}

func memP(name, alias string, min int64, max uint64, def int64, f paramFlags) redisParam {
	return redisParam{name: name, alias: alias, kind: pMemory, min: min, max: max, def: strconv.FormatInt(def, 10), flags: f}
}

func specialP(name, alias, def string, f paramFlags) redisParam {
	return redisParam{name: name, alias: alias, kind: pSpecial, def: def, flags: f}
}

var protectedAction = []string{"no", "yes", "local"}

// redisParams is Redis 7.0's table, in its order.
var redisParams = []redisParam{
	boolP("rdbchecksum", "", "yes", immutable),
	boolP("daemonize", "", "no", immutable),
	boolP("io-threads-do-reads", "", "no", immutable),
	boolP("always-show-logo", "", "no", immutable),
	boolP("protected-mode", "", "yes", 0),
	boolP("rdbcompression", "", "yes", 0),
	boolP("rdb-del-sync-files", "", "no", 0),
	boolP("activerehashing", "", "yes", 0),
	boolP("stop-writes-on-bgsave-error", "", "yes", 0),
	boolP("set-proc-title", "", "yes", immutable),
	boolP("dynamic-hz", "", "yes", 0),
	boolP("lazyfree-lazy-eviction", "", "no", 0),
	boolP("lazyfree-lazy-expire", "", "no", 0),
	boolP("lazyfree-lazy-server-del", "", "no", 0),
	boolP("lazyfree-lazy-user-del", "", "no", 0),
	boolP("lazyfree-lazy-user-flush", "", "no", 0),
	boolP("repl-disable-tcp-nodelay", "", "no", 0),
	boolP("repl-diskless-sync", "", "yes", 0),
	boolP("aof-rewrite-incremental-fsync", "", "yes", 0),
	boolP("no-appendfsync-on-rewrite", "", "no", 0),
	boolP("cluster-require-full-coverage", "", "yes", 0),
	boolP("rdb-save-incremental-fsync", "", "yes", 0),
	boolP("aof-load-truncated", "", "yes", 0),
	boolP("aof-use-rdb-preamble", "", "yes", 0),
	boolP("aof-timestamp-enabled", "", "no", 0),
	boolP("cluster-replica-no-failover", "cluster-slave-no-failover", "no", 0),
	boolP("replica-lazy-flush", "slave-lazy-flush", "no", 0),
	boolP("replica-serve-stale-data", "slave-serve-stale-data", "yes", 0),
	boolP("replica-read-only", "slave-read-only", "yes", 0),
	boolP("replica-ignore-maxmemory", "slave-ignore-maxmemory", "yes", 0),
	boolP("jemalloc-bg-thread", "", "yes", 0),
	boolP("activedefrag", "", "no", 0),
	boolP("syslog-enabled", "", "no", immutable),
	boolP("cluster-enabled", "", "no", immutable),
	boolP("appendonly", "", "no", 0),
	boolP("cluster-allow-reads-when-down", "", "no", 0),
	boolP("cluster-allow-pubsubshard-when-down", "", "yes", 0),
	boolP("crash-log-enabled", "", "yes", 0),
	boolP("crash-memcheck-enabled", "", "yes", 0),
	boolP("use-exit-on-panic", "", "no", hidden),
	boolP("disable-thp", "", "yes", immutable),
	boolP("cluster-allow-replica-migration", "", "yes", 0),
	boolP("replica-announced", "", "yes", 0),
	boolP("latency-tracking", "", "yes", 0),
	boolP("aof-disable-auto-gc", "", "no", 0),

	strP("aclfile", "", "", immutable),
	strP("unixsocket", "", "", immutable),
	strP("pidfile", "", "", immutable),
	strP("replica-announce-ip", "slave-announce-ip", "", 0),
	strP("masteruser", "", "", 0),
	strP("cluster-announce-ip", "", "", 0),
	strP("cluster-config-file", "", "nodes.conf", immutable),
	strP("cluster-announce-hostname", "", "", 0),
	strP("syslog-ident", "", "redis", immutable),
	strP("dbfilename", "", "dump.rdb", protected),
	strP("appendfilename", "", "appendonly.aof", immutable),
	strP("appenddirname", "", "appendonlydir", immutable),
	strP("server_cpulist", "", "", immutable),
	strP("bio_cpulist", "", "", immutable),
	strP("aof_rewrite_cpulist", "", "", immutable),
	strP("bgsave_cpulist", "", "", immutable),
	strP("ignore-warnings", "", "", 0),
	strP("proc-title-template", "", "{title} {listen-addr} {server-mode}", 0),
	strP("bind-source-addr", "", "", 0),
	strP("logfile", "", "", immutable),
	strP("masterauth", "", "", 0),
	strP("requirepass", "", "", 0),

	enumP("supervised", "no", immutable, "upstart", "systemd", "auto", "no"),
	enumP("syslog-facility", "local0", immutable, "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"),
	enumP("repl-diskless-load", "disabled", 0, "disabled", "on-empty-db", "swapdb"),
	enumP("loglevel", "notice", 0, "debug", "verbose", "notice", "warning"),
	enumP("maxmemory-policy", "noeviction", 0, "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"),
	enumP("appendfsync", "everysec", 0, "everysec", "always", "no"),
	enumP("oom-score-adj", "no", 0, "no", "yes", "relative", "absolute"), // relative is yes
	enumP("acl-pubsub-default", "resetchannels", 0, "allchannels", "resetchannels"),
	enumP("sanitize-dump-payload", "no", 0, "no", "yes", "clients"),
	enumP("enable-protected-configs", "no", immutable, protectedAction...),
	enumP("enable-debug-command", "no", immutable, protectedAction...),
	enumP("enable-module-command", "no", immutable, protectedAction...),
	enumP("cluster-preferred-endpoint-type", "ip", 0, "ip", "hostname", "unknown-endpoint"),

	intP("databases", "", 1, intMax, 16, immutable),
	intP("port", "", 0, 65535, 6379, 0),
	intP("io-threads", "", 1, 128, 1, immutable),
	intP("auto-aof-rewrite-percentage", "", 0, intMax, 100, 0),
	intP("cluster-replica-validity-factor", "cluster-slave-validity-factor", 0, intMax, 10, 0),
	intP("list-max-listpack-size", "list-max-ziplist-size", intMin, intMax, -2, 0),
	intP("tcp-keepalive", "", 0, intMax, 300, 0),
	intP("cluster-migration-barrier", "", 0, intMax, 1, 0),
	intP("active-defrag-cycle-min", "", 1, 99, 1, 0),
	intP("active-defrag-cycle-max", "", 1, 99, 25, 0),
	intP("active-defrag-threshold-lower", "", 0, 1000, 10, 0),
	intP("active-defrag-threshold-upper", "", 0, 1000, 100, 0),
	intP("lfu-log-factor", "", 0, intMax, 10, 0),
	intP("lfu-decay-time", "", 0, intMax, 1, 0),
	intP("replica-priority", "slave-priority", 0, intMax, 100, 0),
	intP("repl-diskless-sync-delay", "", 0, intMax, 5, 0),
	intP("maxmemory-samples", "", 1, intMax, 5, 0),
	intP("maxmemory-eviction-tenacity", "", 0, 100, 10, 0),
	intP("timeout", "", 0, intMax, 0, 0),
	intP("replica-announce-port", "slave-announce-port", 0, 65535, 0, 0),
	intP("tcp-backlog", "", 0, intMax, 511, immutable),
	intP("cluster-port", "", 0, 65535, 0, immutable),
	intP("cluster-announce-bus-port", "", 0, 65535, 0, 0),
	intP("cluster-announce-port", "", 0, 65535, 0, 0),
	intP("cluster-announce-tls-port", "", 0, 65535, 0, 0),
	intP("repl-timeout", "", 1, intMax, 60, 0),
	intP("repl-ping-replica-period", "repl-ping-slave-period", 1, intMax, 10, 0),
	intP("list-compress-depth", "", 0, intMax, 0, 0),
	intP("rdb-key-save-delay", "", intMin, intMax, 0, hidden),
	intP("key-load-delay", "", intMin, intMax, 0, hidden),
	intP("active-expire-effort", "", 1, 10, 1, 0),
	intP("hz", "", 0, intMax, 10, 0),
	intP("min-replicas-to-write", "min-slaves-to-write", 0, intMax, 0, 0),
	intP("min-replicas-max-lag", "min-slaves-max-lag", 0, intMax, 10, 0),
	intP("watchdog-period", "", 0, intMax, 0, hidden),
	intP("shutdown-timeout", "", 0, intMax, 10, 0),
	intP("repl-diskless-sync-max-replicas", "", 0, intMax, 0, 0),
	intP("maxclients", "", 1, uintMax, 10000, 0),
	{name: "unixsocketperm", kind: pInt, max: 0o777, def: "0", flags: immutable}, // octal in Redis; immutable, so never parsed
	intP("active-defrag-max-scan-fields", "", 1, longMax, 1000, 0),
	intP("slowlog-max-len", "", 0, longMax, 128, 0),
	intP("acllog-max-len", "", 0, longMax, 128, 0),
	intP("busy-reply-threshold", "lua-time-limit", 0, longMax, 5000, 0),
	intP("cluster-node-timeout", "", 0, longMax, 15000, 0),
	intP("slowlog-log-slower-than", "", -1, longMax, 10000, 0),
	intP("latency-monitor-threshold", "", 0, longMax, 0, 0),
	memP("proto-max-bulk-len", "", 1<<20, longMax, 512<<20, 0),
	intP("stream-node-max-entries", "", 0, longMax, 100, 0),
	memP("repl-backlog-size", "", 1, longMax, 1<<20, 0),
	memP("maxmemory", "", 0, ullongMx, 0, 0),
	memP("cluster-link-sendbuf-limit", "", 0, ullongMx, 0, 0),
	intP("hash-max-listpack-entries", "hash-max-ziplist-entries", 0, longMax, 512, 0),
	intP("set-max-intset-entries", "", 0, longMax, 512, 0),
	intP("zset-max-listpack-entries", "zset-max-ziplist-entries", 0, longMax, 128, 0),
	memP("active-defrag-ignore-bytes", "", 1, longMax, 100<<20, 0),
	memP("hash-max-listpack-value", "hash-max-ziplist-value", 0, longMax, 64, 0),
	memP("stream-node-max-bytes", "", 0, longMax, 4096, 0),
	memP("zset-max-listpack-value", "zset-max-ziplist-value", 0, longMax, 64, 0),
	memP("hll-sparse-max-bytes", "", 0, longMax, 3000, 0),
	intP("tracking-table-max-keys", "", 0, longMax, 1000000, 0),
	memP("client-query-buffer-limit", "", 1<<20, longMax, 1<<30, 0),
	memP("maxmemory-clients", "", -100, longMax, 0, 0), // or a percentage of maxmemory
	intP("repl-backlog-ttl", "", 0, longMax, 3600, 0),
	memP("auto-aof-rewrite-min-size", "", 0, longMax, 64<<20, 0),
	intP("loading-process-events-interval-bytes", "", 1024, intMax, 2<<20, hidden),

	// Added by Redis 7.0's patch releases (7.0.15 has them).
	boolP("replica-ignore-disk-write-errors", "", "no", 0),
	enumP("propagation-error-behavior", "ignore", 0, "ignore", "panic", "panic-on-replicas"),
	specialP("shutdown-on-sigint", "", "default", 0),
	specialP("shutdown-on-sigterm", "", "default", 0),
	intP("socket-mark-id", "", 0, uintMax, 0, immutable),

	intP("tls-port", "", 0, 65535, 0, 0),
	intP("tls-session-cache-size", "", 0, intMax, 20*1024, 0),
	intP("tls-session-cache-timeout", "", 0, intMax, 300, 0),
	boolP("tls-cluster", "", "no", 0),
	boolP("tls-replication", "", "no", 0),
	enumP("tls-auth-clients", "yes", 0, "no", "yes", "optional"),
	boolP("tls-prefer-server-ciphers", "", "no", 0),
	boolP("tls-session-caching", "", "yes", 0),
	strP("tls-cert-file", "", "", 0),
	strP("tls-key-file", "", "", 0),
	strP("tls-key-file-pass", "", "", 0),
	strP("tls-client-cert-file", "", "", 0),
	strP("tls-client-key-file", "", "", 0),
	strP("tls-client-key-file-pass", "", "", 0),
	strP("tls-dh-params-file", "", "", 0),
	strP("tls-ca-cert-file", "", "", 0),
	strP("tls-ca-cert-dir", "", "", 0),
	strP("tls-protocols", "", "", 0),
	strP("tls-ciphers", "", "", 0),
	strP("tls-ciphersuites", "", "", 0),

	specialP("dir", "", "", protected),
	specialP("save", "", "3600 1 300 100 60 10000", 0),
	specialP("client-output-buffer-limit", "", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", 0),
	specialP("oom-score-adj-values", "", "0 200 800", 0),
	specialP("notify-keyspace-events", "", "", 0),
	specialP("bind", "", "* -::*", 0),
	specialP("replicaof", "slaveof", "", immutable),
	specialP("latency-tracking-info-percentiles", "", "50 99 99.9", 0),
}

// redisParamByName finds a parameter by its name or alias (lower case).
var redisParamByName = func() map[string]*redisParam {
	m := make(map[string]*redisParam, 2*len(redisParams))
	for i := range redisParams {
		p := &redisParams[i]
		m[p.name] = p
		if p.alias != "" {
			m[p.alias] = p
		}
	}
	return m
}()

// The ends of CONFIG SET's error for a value of the wrong type, Redis's.
var (
	errParamNotInt   = errors.New("argument couldn't be parsed into an integer")
	errParamNotBool  = errors.New("argument must be 'yes' or 'no'")
	errParamNotMem   = errors.New("argument must be a memory value")
	errParamSave     = errors.New("Invalid save parameters")
	errParamArgCount = errors.New("wrong number of arguments")
	errParamOOM      = errors.New("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
	errParamPct      = errors.New("Invalid latency-tracking-info-percentiles parameters")
	errParamPctRange = errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
	errParamTemplate = errors.New("template format is invalid or contains unknown variables")
)

// normalize validates v for p as Redis's CONFIG SET does and returns it as
// CONFIG GET then reports it.
func (p *redisParam) normalize(v string) (string, error) {
	switch p.kind {
	case pBool:
		switch strings.ToLower(v) {
		case "yes":
			return "yes", nil
		case "no":
			return "no", nil
		}
		return "", errParamNotBool
	case pEnum:
		low := strings.ToLower(v)
		if p.name == "oom-score-adj" && low == "relative" {
			return "yes", nil // the same value as yes, reported by its first name
		}
		for _, e := range p.enum {
			if e == low {
				return e, nil
			}
		}
		return "", errors.New("argument(s) must be one of the following: " + strings.Join(p.enum, ", "))
	case pInt:
		n, ok := parseIntOK([]byte(v))
		if !ok {
			return "", errParamNotInt
		}
		if err := p.inRange(n); err != nil {
			return "", err
		}
		return strconv.FormatInt(n, 10), nil
	case pMemory:
		if p.name == "maxmemory-clients" && len(v) > 1 && strings.HasSuffix(v, "%") {
			// Redis keeps a percentage as its negative; min bounds it.
			n, ok := parseIntOK([]byte(v[:len(v)-1]))
			if !ok || n < 0 {
				return "", errors.New("argument must be a memory or percent value")
			}
			if -n < p.min {
				return "", errors.New("percentage argument must be less or equal to " + strconv.FormatInt(-p.min, 10))
			}
			return strconv.FormatInt(n, 10) + "%", nil
		}
		n, ok := memToUint(v)
		if !ok {
			if p.name == "maxmemory-clients" {
				return "", errors.New("argument must be a memory or percent value")
			}
			return "", errParamNotMem
		}
		if n > p.max || (p.min > 0 && n < uint64(p.min)) {
			return "", p.rangeError()
		}
		return strconv.FormatUint(n, 10), nil
	case pSpecial:
		return validateSpecial(p.name, v)
	}
	if p.name == "proc-title-template" && !validTitleTemplate(v) {
		return "", errParamTemplate
	}
	return v, nil
}

func (p *redisParam) inRange(n int64) error {
	if n < p.min || (n >= 0 && uint64(n) > p.max) {
		return p.rangeError()
	}
	return nil
}

func (p *redisParam) rangeError() error {
	return errors.New("argument must be between " + strconv.FormatInt(p.min, 10) + " and " + strconv.FormatUint(p.max, 10) + " inclusive")
}

// memToUint parses a memory value as Redis's memtoull: digits, then
// nothing, b, k, kb, m, mb, g or gb (case-insensitive; k is 1000, kb 1024).
func memToUint(v string) (uint64, bool) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	mul := map[string]uint64{"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 * 1000, "mb": 1 << 20, "g": 1000 * 1000 * 1000, "gb": 1 << 30}[strings.ToLower(v[i:])]
	if mul == 0 || i == 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(v[:i], 10, 64)
	if err != nil || n > math.MaxUint64/mul {
		return 0, false
	}
	return n * mul, true
}

// validateSpecial checks the parameters with their own syntax that Cellar
// stores without applying.
func validateSpecial(name, v string) (string, error) {
	f := strings.Fields(v)
	switch name {
	case "oom-score-adj-values":
		if len(f) != 3 {
			return "", errParamArgCount
		}
		for _, s := range f {
			n, err := strconv.Atoi(s)
			if err != nil || n < -2000 || n > 2000 {
				return "", errParamOOM
			}
		}
	case "latency-tracking-info-percentiles":
		for i, s := range f {
			x, ok := parseFloat([]byte(s))
			if !ok {
				return "", errParamPct
			}
			if x < 0 || x > 100 {
				return "", errParamPctRange
			}
			f[i] = strconv.FormatFloat(x, 'f', -1, 64)
		}
	case "shutdown-on-sigint", "shutdown-on-sigterm":
		// Flags, reported in this order; default is none of them.
		names := []string{"save", "nosave", "now", "force"}
		set := map[string]bool{}
		for _, s := range f {
			s = strings.ToLower(s)
			if s != "default" && !slices.Contains(names, s) {
				return "", errors.New("argument(s) must be one of the following: default, save, nosave, now, force")
			}
			set[s] = true
		}
		if len(f) == 0 {
			return "", errors.New("argument(s) must be one of the following: default, save, nosave, now, force")
		}
		if set["save"] && set["nosave"] {
			return "", errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")
		}
		var out []string
		for _, n := range names {
			if set[n] {
				out = append(out, n)
			}
		}
		if len(out) == 0 {
			return "default", nil
		}
		return strings.Join(out, " "), nil
	case "bind":
		if len(f) > 16 { // Redis's CONFIG_BINDADDR_MAX
			return "", errors.New("Too many bind addresses specified.")
		}
		return strings.Join(f, " "), nil
	case "save":
		if len(f)%2 != 0 {
			return "", errParamSave
		}
		for _, s := range f {
			if n, err := strconv.Atoi(s); err != nil || n < 0 {
				return "", errParamSave
			}
		}
	}
	return strings.Join(f, " "), nil
}

// validTitleTemplate is Redis's check of proc-title-template: every
// {variable} known and closed, and something left once expanded (here with
// an empty title, server mode and socket, as Redis checks it).
func validTitleTemplate(t string) bool {
	vars := map[string]string{"{title}": "", "{listen-addr}": "*:6379", "{server-mode}": "", "{port}": "6379",
		"{tls-port}": "0", "{unixsocket}": "", "{config-file}": ""}
	var out strings.Builder
	for rest := t; rest != ""; {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			out.WriteString(rest)
			break
		}
		if rest[open] == '}' {
			return false
		}
		out.WriteString(rest[:open])
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return false
		}
		val, ok := vars[rest[open:open+end+1]]
		if !ok {
			return false
		}
		out.WriteString(val)
		rest = rest[open+end+1:]
	}
	return strings.Trim(out.String(), " ") != ""
}

// storedParams are the values of the parameters Cellar keeps without
// applying, by name; a parameter not in it has its default.
type storedParams map[string]string

// paramsFromTable adds to have, the parameters Cellar applies, the aliases
// Redis gives them, and every other parameter of Redis's table as a stored
// value.
func (a *Actor) paramsFromTable(have []Param) []Param {
	if a.storedParams == nil {
		a.storedParams = storedParams{}
	}
	byName := make(map[string]int, len(have))
	for i, p := range have {
		byName[p.Name] = i
	}
	out := have
	for i := range redisParams {
		rp := &redisParams[i]
		var p Param
		if j, ok := byName[rp.name]; ok {
			p = have[j]
		} else {
			p = a.storedParam(rp)
			out = append(out, p)
		}
		if rp.alias != "" {
			alias := p
			alias.Name = rp.alias
			out = append(out, alias)
		}
	}
	return out
}

// NormalizeParam checks value as Redis 7.0 checks its parameter name (which
// must be one of Redis's) and returns it as CONFIG GET would then report
// it, or Redis's reason for refusing it: for the settings the actor's owner
// applies (Config.Params), so that they answer in Redis's words.
func NormalizeParam(name, value string) (string, error) {
	rp := redisParamByName[name]
	if rp == nil {
		return "", errors.New("actor: " + name + " is not a Redis parameter")
	}
	return rp.normalize(value)
}

// storedParam is the Param of a parameter Cellar stores without applying.
func (a *Actor) storedParam(rp *redisParam) Param {
	p := Param{Name: rp.name, Hidden: rp.flags&hidden != 0, Get: func() string { return a.storedValue(rp) }}
	if rp.flags&(immutable|protected) == 0 {
		p.Set = func(v string) error {
			n, err := rp.normalize(v)
			if err == nil {
				a.storedParams[rp.name] = n
				a.applyOpsParams() // slowlog-*, latency-monitor-threshold (ops.go)
			}
			return err
		}
	}
	return p
}

func (a *Actor) storedValue(rp *redisParam) string {
	if v, ok := a.storedParams[rp.name]; ok {
		return v
	}
	return rp.def
}

// storedParamValue is the value of a stored parameter by name, for INFO.
func (a *Actor) storedParamValue(name string) string {
	return a.storedValue(redisParamByName[name])
}

// Param is one setting CONFIG GET/SET knows, by its Redis name.
type Param struct {
	Name string
	// Hidden settings are reported by CONFIG GET only when named exactly.
	Hidden bool
	Get    func() string
	// Set changes the setting at run time; nil for settings fixed at start.
	// It runs on the actor goroutine and returns a reason on a bad value.
	Set func(value string) error
}
