package main

import "testing"

func TestParseKeyspace(t *testing.T) {
	for _, c := range []struct {
		ch   string
		db   int
		key  string
		okay bool
	}{
		{"__keyspace@0__:foo", 0, "foo", true},
		{"__keyspace@15__:a__:b", 15, "a__:b", true},
		{"__keyspace@3__:", 3, "", true},
		{"__keyevent@0__:set", 0, "", false},
		{"__keyspace@x__:foo", 0, "", false},
		{"cellar:migrate:marker:1", 0, "", false},
	} {
		db, key, ok := parseKeyspace(c.ch)
		if ok != c.okay || (ok && (db != c.db || key != c.key)) {
			t.Errorf("parseKeyspace(%q) = %d %q %v", c.ch, db, key, ok)
		}
	}
}
