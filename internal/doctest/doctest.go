// Package doctest finds the runnable commands of the project's Markdown pages (README.md and
// docs/*.md) and the output each one shows, so that a test can run them on a fresh build and an
// example that stops working fails CI (issue 41).
//
// A runnable block is a fenced code block, its fence at the start of a line, whose info string
// is "sh run", optionally followed by tags naming what it needs beyond the local adapter:
//
//	```sh run docker
//	sandboxer tool bash --adapter docker --input '{"cmd":"id"}'
//	```
//
// The block's expected output, when it shows one, is the next fenced block, separated from it
// by blank lines only, whose info string is "text output". In it, "..." matches any text within
// a line, and a line that is only "..." matches any number of whole lines (durations, ids, the
// rest of a JSON object). A block without an output block must only succeed.
//
// Any other block (```sh, ```go, ```yaml, ```console) is shown, not run: the test command
// itself, commands that need a cluster or a registry, and anything slower than about 20 s.
package doctest

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// Block is one runnable block of a page.
type Block struct {
	// Line is the 1-based line of the block's opening fence.
	Line int
	// Tags are the words after "sh run" in the info string: "docker", "oci", "runsc", "repo",
	// "node", "python".
	Tags []string
	// Script is the block's text, run by bash with errexit and pipefail.
	Script string
	// Output is the expected output (stdout and stderr together); nil when the block shows none.
	Output *string
}

// Has reports whether the block carries tag.
func (b Block) Has(tag string) bool {
	for _, t := range b.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// fence is one fenced block of a page, runnable or not.
type fence struct {
	line int
	info []string
	text string
	// after is the line after the closing fence.
	after int
}

// Parse returns the runnable blocks of a Markdown page, in order.
func Parse(page []byte) []Block {
	fences := scan(page)
	var blocks []Block
	for i, f := range fences {
		if len(f.info) < 2 || f.info[0] != "sh" || f.info[1] != "run" {
			continue
		}
		b := Block{Line: f.line, Tags: f.info[2:], Script: f.text}
		if i+1 < len(fences) {
			next := fences[i+1]
			if len(next.info) == 2 && next.info[0] == "text" && next.info[1] == "output" &&
				blankBetween(page, f.after, next.line) {
				out := next.text
				b.Output = &out
			}
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// scan returns every fenced block of page (``` or longer fences at the start of a line).
func scan(page []byte) []fence {
	var (
		fences []fence
		cur    *fence
		closer string
		body   strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cur == nil {
			if strings.HasPrefix(line, "```") {
				tick := len(line) - len(strings.TrimLeft(line, "`"))
				cur = &fence{line: n, info: strings.Fields(line[tick:])}
				closer = line[:tick]
				body.Reset()
			}
			continue
		}
		if strings.HasPrefix(line, closer) && strings.TrimSpace(strings.TrimLeft(line, "`")) == "" {
			cur.text, cur.after = body.String(), n+1
			fences = append(fences, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	return fences
}

// blankBetween reports whether lines from (inclusive) to to (exclusive) of page are all blank.
func blankBetween(page []byte, from, to int) bool {
	lines := strings.Split(string(page), "\n")
	for n := from; n < to; n++ {
		if n-1 < len(lines) && strings.TrimSpace(lines[n-1]) != "" {
			return false
		}
	}
	return true
}

// Match reports whether output matches the expected text of an output block: line by line,
// "..." in a line matching any text within it and a line of "..." any number of lines. Trailing
// white space of each line and trailing blank lines are ignored.
func Match(expected, output string) bool {
	return pattern(expected).MatchString(normalize(output))
}

// pattern compiles an output block into an anchored regular expression over normalized output.
func pattern(expected string) *regexp.Regexp {
	var re strings.Builder
	re.WriteString(`\A`)
	for _, l := range strings.Split(strings.TrimSuffix(normalize(expected), "\n"), "\n") {
		if l == "..." {
			re.WriteString(`(?:[^\n]*\n)*`)
			continue
		}
		re.WriteString(strings.ReplaceAll(regexp.QuoteMeta(l), `\.\.\.`, `[^\n]*`))
		re.WriteString(`\n`)
	}
	re.WriteString(`\z`)
	return regexp.MustCompile(re.String())
}

// normalize trims each line's trailing white space and the text's trailing blank lines, and
// ends it with one newline.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}
