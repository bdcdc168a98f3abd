package cellar

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link in the repository's Markdown
// files (README.md, docs/, bench/results/, ...): the file it names must
// exist, and a #fragment must name a heading of that file, as GitHub
// makes anchors of headings. Links to web pages are not followed.
func TestDocLinks(t *testing.T) {
	skip := map[string]bool{".git": true, "node_modules": true, "work": true, "data": true}
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (skip[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found only %d Markdown files: %v", len(files), files)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(p string) (map[string]bool, error) {
		if a, ok := anchors[p]; ok {
			return a, nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		a := map[string]bool{}
		seen := map[string]int{}
		for _, h := range headings(string(b)) {
			s := slug(h)
			if n := seen[s]; n > 0 {
				a[s+"-"+strconv.Itoa(n)] = true
			} else {
				a[s] = true
			}
			seen[s]++
		}
		anchors[p] = a
		return a, nil
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(b)) {
			target, frag, _ := strings.Cut(l.target, "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := f
			if target != "" {
				p = filepath.Join(filepath.Dir(f), filepath.FromSlash(target))
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s:%d: link to %q: no such file", f, l.line, l.target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(p, ".md") {
				t.Errorf("%s:%d: link to %q: a fragment on a file that is not Markdown", f, l.line, l.target)
				continue
			}
			a, err := anchorsOf(p)
			if err != nil {
				t.Fatal(err)
			}
			if !a[frag] {
				t.Errorf("%s:%d: link to %q: %s has no heading #%s", f, l.line, l.target, p, frag)
			}
		}
	}
}

type mdLink struct {
	target string
	line   int
}

var (
	linkRe = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	codeRe = regexp.MustCompile("`[^`]*`")
)

// links returns the targets of the inline links and images of a Markdown
// text, outside fenced code blocks and code spans.
func links(text string) []mdLink {
	var out []mdLink
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		// A code span inside a link's text ([`deploy/`](deploy/)) stays;
		// one elsewhere is blanked, so that a link written inside code is
		// not taken for one.
		line = codeRe.ReplaceAllStringFunc(line, func(s string) string {
			if strings.Contains(s, "](") {
				return strings.Repeat(" ", len(s))
			}
			return s
		})
		for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
			out = append(out, mdLink{m[1], i + 1})
		}
	}
	return out
}

// headings returns the text of the ATX headings of a Markdown text,
// outside fenced code blocks.
func headings(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if len(line)-len(h) > 6 || (h != "" && h[0] != ' ') {
			continue
		}
		out = append(out, strings.TrimSpace(h))
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, with everything but
// letters, digits, spaces, hyphens and underscores removed and spaces made
// hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
