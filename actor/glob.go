package actor

// globMatch reports whether s matches the Redis glob pattern p, with the
// semantics of Redis's stringmatchlen: '*' any run, '?' any byte, '[...]'
// a set ('^' negates, 'a-z' ranges either way round, '\' escapes), '\'
// escapes outside sets too. An unterminated set matches as far as it goes.
func globMatch(p, s []byte) bool {
	skip := false
	return globFrom(p, s, &skip, 0)
}

// globFrom matches from the start of p and s. skip becomes true once a '*'
// has tried every suffix and failed: a longer match cannot succeed either,
// which keeps patterns like "*a*a*a*b" linear-ish instead of exponential.
func globFrom(p, s []byte, skip *bool, depth int) bool {
	if depth > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globFrom(p[1:], s, skip, depth+1) {
					return true
				}
				if *skip {
					return false
				}
				s = s[1:]
			}
			*skip = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			neg := len(p) > 0 && p[0] == '^'
			if neg {
				p = p[1:]
			}
			match := false
			for {
				if len(p) >= 2 && p[0] == '\\' {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if len(p) == 0 {
					break
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					if s[0] >= lo && s[0] <= hi {
						match = true
					}
					p = p[2:]
				} else if p[0] == s[0] {
					match = true
				}
				p = p[1:]
			}
			if neg {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				// Unterminated set: the pattern is used up.
				return len(s) == 0
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			if p[0] != s[0] {
				return false
			}
			s = s[1:]
		default:
			if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// globPrefix is the literal prefix of a pattern: the bytes every match must
// start with (used to narrow KEYS and SCAN to a key range).
func globPrefix(p []byte) []byte {
	for i, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return p[:i]
		}
	}
	return p
}
