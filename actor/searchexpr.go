package actor

import (
	"math"
	"strconv"
	"strings"
)

// APPLY and FILTER expressions (FT.AGGREGATE): numbers, 'strings' or
// "strings", @properties, + - * / % ^, comparisons, && || !, parentheses,
// and functions: upper, lower, strlen, substr, contains, startswith,
// to_number, to_str, exists, abs, ceil, floor, sqrt, log, log2, exp.

type aexpr struct {
	op   string // "num", "str", "prop", "call", or an operator
	num  float64
	str  string
	kids []*aexpr
}

// maxExprDepth bounds an expression's nesting.
const maxExprDepth = 128

type aparser struct {
	s     string
	pos   int
	depth int
}

func parseAExpr(s string) (*aexpr, error) {
	p := &aparser{s: s}
	e, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, errFtExpr(p.s, p.pos)
	}
	return e, nil
}

func (p *aparser) space() {
	for p.pos < len(p.s) && isQuerySpace(p.s[p.pos]) {
		p.pos++
	}
}

// levels of binary operators, loosest first.
var aLevels = [][]string{{"||"}, {"&&"}, {"==", "!=", "<=", ">=", "<", ">"}, {"+", "-"}, {"*", "/", "%"}, {"^"}}

func (p *aparser) binary(level int) (*aexpr, error) {
	if level == len(aLevels) {
		return p.unary()
	}
	left, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		p.space()
		op := ""
		for _, o := range aLevels[level] {
			if strings.HasPrefix(p.s[p.pos:], o) {
				op = o
				break
			}
		}
		if op == "" {
			return left, nil
		}
		p.pos += len(op)
		right, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		left = &aexpr{op: op, kids: []*aexpr{left, right}}
	}
}

func (p *aparser) unary() (*aexpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprDepth {
		return nil, ErrFtQueryTooDeep
	}
	p.space()
	if p.pos >= len(p.s) {
		return nil, errFtExpr(p.s, p.pos)
	}
	switch c := p.s[p.pos]; {
	case c == '!' || c == '-':
		p.pos++
		k, err := p.unary()
		if err != nil {
			return nil, err
		}
		op := "!"
		if c == '-' {
			op = "neg"
		}
		return &aexpr{op: op, kids: []*aexpr{k}}, nil
	case c == '(':
		p.pos++
		e, err := p.binary(0)
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return nil, errFtExpr(p.s, p.pos)
		}
		p.pos++
		return e, nil
	case c == '\'' || c == '"':
		end := strings.IndexByte(p.s[p.pos+1:], c)
		if end < 0 {
			return nil, errFtExpr(p.s, p.pos)
		}
		s := p.s[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return &aexpr{op: "str", str: s}, nil
	case c == '@':
		p.pos++
		start := p.pos
		for p.pos < len(p.s) && isPropChar(p.s[p.pos]) {
			p.pos++
		}
		if p.pos == start {
			return nil, errFtExpr(p.s, p.pos)
		}
		return &aexpr{op: "prop", str: p.s[start:p.pos]}, nil
	case c >= '0' && c <= '9' || c == '.':
		start := p.pos
		for p.pos < len(p.s) && (p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || p.s[p.pos] == '.' || p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
			p.pos++
		}
		f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
		if err != nil {
			return nil, errFtExpr(p.s, start)
		}
		return &aexpr{op: "num", num: f}, nil
	case isPropChar(c):
		start := p.pos
		for p.pos < len(p.s) && isPropChar(p.s[p.pos]) {
			p.pos++
		}
		name := strings.ToLower(p.s[start:p.pos])
		p.space()
		if p.pos >= len(p.s) || p.s[p.pos] != '(' {
			return nil, errFtExpr(p.s, start)
		}
		p.pos++
		call := &aexpr{op: "call", str: name}
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ')' {
			p.pos++
		} else {
			for {
				a, err := p.binary(0)
				if err != nil {
					return nil, err
				}
				call.kids = append(call.kids, a)
				p.space()
				if p.pos < len(p.s) && p.s[p.pos] == ',' {
					p.pos++
					continue
				}
				if p.pos < len(p.s) && p.s[p.pos] == ')' {
					p.pos++
					break
				}
				return nil, errFtExpr(p.s, p.pos)
			}
		}
		if n, ok := aFuncs[name]; !ok {
			return nil, errFtFunction(name)
		} else if n >= 0 && len(call.kids) != n {
			return nil, errFtFunctionArgs(name)
		}
		return call, nil
	}
	return nil, errFtExpr(p.s, p.pos)
}

func isPropChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// aFuncs are the functions and how many arguments each takes.
var aFuncs = map[string]int{"upper": 1, "lower": 1, "strlen": 1, "substr": 3, "contains": 2, "startswith": 2,
	"to_number": 1, "to_str": 1, "exists": 1, "abs": 1, "ceil": 1, "floor": 1, "sqrt": 1, "log": 1, "log2": 1, "exp": 1}

// props adds the properties e refers to.
func (e *aexpr) props(into map[string]bool) {
	if e.op == "prop" {
		into[e.str] = true
	}
	for _, k := range e.kids {
		k.props(into)
	}
}

func boolVal(b bool) aval {
	if b {
		return numVal(1)
	}
	return numVal(0)
}

func (e *aexpr) eval(r *arow) aval {
	switch e.op {
	case "num":
		return numVal(e.num)
	case "str":
		return strVal(e.str)
	case "prop":
		return r.lookup(e.str)
	case "!":
		return boolVal(!e.kids[0].eval(r).truthy())
	case "neg":
		f, _ := e.kids[0].eval(r).asNum()
		return numVal(-f)
	case "&&":
		return boolVal(e.kids[0].eval(r).truthy() && e.kids[1].eval(r).truthy())
	case "||":
		return boolVal(e.kids[0].eval(r).truthy() || e.kids[1].eval(r).truthy())
	case "==", "!=", "<", "<=", ">", ">=":
		c := compareAval(e.kids[0].eval(r), e.kids[1].eval(r))
		switch e.op {
		case "==":
			return boolVal(c == 0)
		case "!=":
			return boolVal(c != 0)
		case "<":
			return boolVal(c < 0)
		case "<=":
			return boolVal(c <= 0)
		case ">":
			return boolVal(c > 0)
		}
		return boolVal(c >= 0)
	case "+", "-", "*", "/", "%", "^":
		a, oka := e.kids[0].eval(r).asNum()
		b, okb := e.kids[1].eval(r).asNum()
		if !oka || !okb {
			return aval{}
		}
		switch e.op {
		case "+":
			return numVal(a + b)
		case "-":
			return numVal(a - b)
		case "*":
			return numVal(a * b)
		case "/":
			return numVal(a / b)
		case "%":
			return numVal(float64(int64(a) % max(int64(b), 1)))
		}
		return numVal(math.Pow(a, b))
	case "call":
		return e.call(r)
	}
	return aval{}
}

func (e *aexpr) call(r *arow) aval {
	args := make([]aval, len(e.kids))
	for i, k := range e.kids {
		args[i] = k.eval(r)
	}
	num := func(i int) float64 { f, _ := args[i].asNum(); return f }
	switch e.str {
	case "upper":
		return strVal(strings.ToUpper(args[0].String()))
	case "lower":
		return strVal(strings.ToLower(args[0].String()))
	case "strlen":
		return numVal(float64(len(args[0].String())))
	case "substr":
		s := args[0].String()
		off, n := int(num(1)), int(num(2))
		if off < 0 {
			off += len(s)
		}
		off = max(0, min(off, len(s)))
		if n < 0 {
			n = len(s) - off + n + 1
		}
		return strVal(s[off:min(len(s), off+max(n, 0))])
	case "contains":
		return numVal(float64(strings.Count(args[0].String(), args[1].String())))
	case "startswith":
		return boolVal(strings.HasPrefix(args[0].String(), args[1].String()))
	case "to_number":
		f, _ := args[0].asNum()
		return numVal(f)
	case "to_str":
		return strVal(args[0].String())
	case "exists":
		return boolVal(!args[0].null())
	case "abs":
		return numVal(math.Abs(num(0)))
	case "ceil":
		return numVal(math.Ceil(num(0)))
	case "floor":
		return numVal(math.Floor(num(0)))
	case "sqrt":
		return numVal(math.Sqrt(num(0)))
	case "log":
		return numVal(math.Log(num(0)))
	case "log2":
		return numVal(math.Log2(num(0)))
	case "exp":
		return numVal(math.Exp(num(0)))
	}
	return aval{}
}
