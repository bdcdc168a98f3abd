package actor

import (
	"math"
	"testing"
)

func TestStrtod(t *testing.T) {
	cases := []struct {
		in     string
		v      float64
		n      int
		erange bool
	}{
		{"1.5", 1.5, 3, false},
		{" 2", 2, 2, false},
		{"-inf", math.Inf(-1), 4, false},
		{"+Infinity", math.Inf(1), 9, false},
		{"infx", math.Inf(1), 3, false},
		{"0x10", 16, 4, false},
		{"0x1p-2", 0.25, 6, false},
		{"0x", 0, 1, false},
		{"1e", 1, 1, false},
		{"1e+", 1, 1, false},
		{"1e5x", 1e5, 3, false},
		{".5", 0.5, 2, false},
		{"5.", 5, 2, false},
		{".", 0, 0, false},
		{"", 0, 0, false},
		{"abc", 0, 0, false},
		{"1e400", math.Inf(1), 5, true},
		{"-1e400", math.Inf(-1), 6, true},
		{"1e-400", 0, 6, true},
		{"0e-400", 0, 6, false},
		{"1_0", 1, 1, false},
	}
	for _, c := range cases {
		v, n, er := strtod([]byte(c.in))
		if v != c.v || n != c.n || er != c.erange {
			t.Errorf("strtod(%q) = %v, %d, %v; want %v, %d, %v", c.in, v, n, er, c.v, c.n, c.erange)
		}
	}
	if v, n, _ := strtod([]byte("nan(abc)x")); !math.IsNaN(v) || n != 8 {
		t.Errorf("nan(abc): %v %d", v, n)
	}
}

func TestScoreParsing(t *testing.T) {
	for in, ok := range map[string]bool{"1": true, "inf": true, "-inf": true, "0x10": true, " 1": false, "": false, "nan": false, "1e400": false, "1e-400": false, "1 ": false, "4.9e-324": true} {
		if _, got := parseScore([]byte(in)); got != ok {
			t.Errorf("parseScore(%q) ok = %v", in, got)
		}
	}
	for in, want := range map[string]float64{"": 0, "(": 0, " 1": 1, "(5": 5, "1e400": math.Inf(1), "-inf": math.Inf(-1)} {
		if v, _, ok := parseScoreBound([]byte(in)); !ok || v != want {
			t.Errorf("parseScoreBound(%q) = %v %v", in, v, ok)
		}
	}
	for _, in := range []string{"abc", "(nan", " ", "1x", "[1"} {
		if _, _, ok := parseScoreBound([]byte(in)); ok {
			t.Errorf("parseScoreBound(%q) accepted", in)
		}
	}
}

func TestD2String(t *testing.T) {
	for v, want := range map[float64]string{
		0.1: "0.10000000000000001", 123.456: "123.456", 1e15: "1000000000000000",
		4503599627370496: "4503599627370496", 1e17: "1e+17", math.Inf(-1): "-inf",
		-4503599627370495: "-4503599627370495", 1.5e-7: "1.4999999999999999e-07",
	} {
		if got := string(appendD2String(nil, v)); got != want {
			t.Errorf("d2string(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{1e17: "100000000000000000", 1e21: "1e+21", 1.5e17: "150000000000000000", 2.5: "2.5"} {
		if got := string(appendListpackScore(nil, v)); got != want {
			t.Errorf("listpack score %v = %q, want %q", v, got, want)
		}
	}
}
