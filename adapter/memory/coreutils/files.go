package coreutils

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

func init() {
	register("cat", cat)
	register("ls", ls)
	register("mkdir", mkdir)
	register("rm", rm)
	register("rmdir", rmdir)
	register("mv", mv)
	register("cp", cp)
	register("touch", touch)
	register("ln", ln)
	register("basename", basename)
	register("dirname", dirname)
	register("readlink", readlink)
	register("realpath", realpath)
	register("mktemp", mktemp)
	register("chmod", chmod)
	for name, feature := range unmodelled {
		register(name, func(e *Env, args []string) int {
			return e.fail(name, "%s are not supported in the memory sandbox", feature)
		})
	}
}

// unmodelled are the utilities of what the tree does not model: each fails, naming the feature,
// rather than being a command that is not found.
var unmodelled = map[string]string{
	"mkfifo": "FIFOs (named pipes)",
	"mknod":  "device files and FIFOs",
	"link":   "hard links",
	"chown":  "file owners (ownership)",
	"chgrp":  "file groups (ownership)",
}

func cat(e *Env, args []string) int {
	flags, files, err := parseFlags(args[1:], "nAu", "")
	if err != nil {
		return e.usage("cat", "%v", err)
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	number := flags['n'] != ""
	status := 0
	line := 0
	for _, name := range files {
		if e.Ctx.Err() != nil {
			return 130
		}
		if !number && name != "-" {
			data, err := e.readAll(name)
			if err != nil {
				e.errf("cat", "%s: %s", name, ErrText(err))
				status = 1
				continue
			}
			if _, err := e.Stdout.Write(data); err != nil {
				return e.writeErr("cat", err)
			}
			continue
		}
		r, err := e.open(name)
		if err != nil {
			e.errf("cat", "%s: %s", name, ErrText(err))
			status = 1
			continue
		}
		if number {
			w := bufio.NewWriter(e.Stdout)
			sc := bufio.NewReader(ctxReader{e.Ctx, r})
			for {
				l, err := sc.ReadString('\n')
				if l != "" {
					line++
					fmt.Fprintf(w, "%6d\t%s", line, l)
				}
				if err != nil {
					break
				}
			}
			r.Close()
			if err := w.Flush(); err != nil {
				return e.writeErr("cat", err)
			}
			continue
		}
		_, err = io.CopyBuffer(e.Stdout, ctxReader{e.Ctx, r}, make([]byte, 32<<10))
		r.Close()
		if err != nil {
			if e.Ctx.Err() != nil {
				return 130
			}
			var we writeError
			if errors.As(err, &we) || isBrokenPipe(err) {
				return e.writeErr("cat", err)
			}
			e.errf("cat", "%s: %s", name, ErrText(err))
			status = 1
		}
	}
	return status
}

type writeError struct{ error }

func modeString(m fs.FileMode) string {
	b := []byte("----------")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) != 0 {
			b[i+1] = rwx[i]
		}
	}
	if m&fs.ModeSticky != 0 {
		b[9] = 't'
	}
	return string(b)
}

func ls(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "aAl1RdFhrtS", "")
	if err != nil {
		return e.usage("ls", "%v", err)
	}
	all, almost, long, recursive, dirOnly := flags['a'] != "", flags['A'] != "", flags['l'] != "", flags['R'] != "", flags['d'] != ""
	classify, reverse, byTime, bySize := flags['F'] != "", flags['r'] != "", flags['t'] != "", flags['S'] != ""
	w := bufio.NewWriter(e.Stdout)
	status := 0
	if len(names) == 0 {
		names = []string{"."}
	}
	type item struct {
		name string
		info fs.FileInfo
		abs  string
	}
	format := func(it item) string {
		name := it.name
		if classify {
			switch {
			case it.info.IsDir():
				name += "/"
			case it.info.Mode()&fs.ModeSymlink != 0:
				name += "@"
			case it.info.Mode().Perm()&0o111 != 0:
				name += "*"
			}
		}
		if !long {
			return name
		}
		if it.info.Mode()&fs.ModeSymlink != 0 {
			if t, err := e.FS.Readlink(it.abs); err == nil {
				name += " -> " + t
			}
		}
		return fmt.Sprintf("%s 1 sandbox sandbox %8d %s %s", modeString(it.info.Mode()), it.info.Size(),
			it.info.ModTime().UTC().Format("Jan _2 15:04"), name)
	}
	sortItems := func(items []item) {
		less := func(i, j int) bool { return items[i].name < items[j].name }
		if byTime {
			less = func(i, j int) bool { return items[i].info.ModTime().After(items[j].info.ModTime()) }
		} else if bySize {
			less = func(i, j int) bool { return items[i].info.Size() > items[j].info.Size() }
		}
		sortStable(len(items), less, func(i, j int) { items[i], items[j] = items[j], items[i] })
		if reverse {
			for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
				items[i], items[j] = items[j], items[i]
			}
		}
	}
	var files, dirs []item
	for _, n := range names {
		abs := e.Abs(n)
		info, err := e.FS.Stat(abs, true)
		if err != nil {
			if li, lerr := e.FS.Stat(abs, false); lerr == nil {
				info = li
			} else {
				e.errf("ls", "cannot access '%s': %s", n, ErrText(err))
				status = 2
				continue
			}
		}
		if long && !dirOnly {
			if li, err := e.FS.Stat(abs, false); err == nil && li.Mode()&fs.ModeSymlink != 0 {
				info = li
			}
		}
		if info.IsDir() && !dirOnly {
			dirs = append(dirs, item{n, info, abs})
		} else {
			files = append(files, item{n, info, abs})
		}
	}
	sortItems(files)
	for _, it := range files {
		fmt.Fprintln(w, format(it))
	}
	var listDir func(label, abs string, header bool) bool
	listDir = func(label, abs string, header bool) bool {
		if e.Ctx.Err() != nil {
			return false
		}
		ents, err := e.FS.ReadDir(abs)
		if err != nil {
			e.errf("ls", "cannot open directory '%s': %s", label, ErrText(err))
			status = 2
			return true
		}
		if header {
			fmt.Fprintf(w, "%s:\n", label)
		}
		var items []item
		if all {
			for _, dot := range []string{".", ".."} {
				if info, err := e.FS.Stat(path.Join(abs, dot), true); err == nil {
					items = append(items, item{dot, info, path.Join(abs, dot)})
				}
			}
		}
		for _, d := range ents {
			if strings.HasPrefix(d.Name(), ".") && !all && !almost {
				continue
			}
			info, err := d.Info()
			if err != nil {
				continue
			}
			items = append(items, item{d.Name(), info, path.Join(abs, d.Name())})
		}
		sortItems(items)
		if long {
			var total int64
			for _, it := range items {
				total += (it.info.Size() + 1023) / 1024
			}
			fmt.Fprintf(w, "total %d\n", total)
		}
		for _, it := range items {
			fmt.Fprintln(w, format(it))
		}
		if recursive {
			for _, it := range items {
				if it.info.IsDir() && it.name != "." && it.name != ".." {
					fmt.Fprintln(w)
					if !listDir(path.Join(label, it.name), it.abs, true) {
						return false
					}
				}
			}
		}
		return true
	}
	sortItems(dirs)
	for i, d := range dirs {
		if i > 0 || len(files) > 0 {
			fmt.Fprintln(w)
		}
		if !listDir(d.name, d.abs, recursive || len(names) > 1) {
			return 130
		}
	}
	if err := w.Flush(); err != nil {
		return e.writeErr("ls", err)
	}
	return status
}

func sortStable(n int, less func(i, j int) bool, swap func(i, j int)) {
	// insertion sort keeps it stable; directory listings are small enough
	for i := 1; i < n; i++ {
		for j := i; j > 0 && less(j, j-1); j-- {
			swap(j, j-1)
		}
	}
}

func mkdir(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "pv", "m")
	if err != nil {
		return e.usage("mkdir", "%v", err)
	}
	if len(names) == 0 {
		return e.usage("mkdir", "missing operand")
	}
	perm := fs.FileMode(0o755)
	if m, ok := flags['m']; ok {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil {
			return e.usage("mkdir", "invalid mode '%s'", m)
		}
		perm = fs.FileMode(v)
	}
	status := 0
	for _, n := range names {
		var err error
		if flags['p'] != "" {
			err = e.FS.MkdirAll(e.Abs(n), perm)
		} else {
			err = e.FS.Mkdir(e.Abs(n), perm)
		}
		if err != nil {
			e.errf("mkdir", "cannot create directory '%s': %s", n, ErrText(err))
			status = 1
		}
	}
	return status
}

func rm(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "rRfvid", "")
	if err != nil {
		return e.usage("rm", "%v", err)
	}
	recursive := flags['r'] != "" || flags['R'] != ""
	force := flags['f'] != ""
	if len(names) == 0 && !force {
		return e.usage("rm", "missing operand")
	}
	status := 0
	for _, n := range names {
		abs := e.Abs(n)
		info, err := e.FS.Stat(abs, false)
		if err != nil {
			if !force {
				e.errf("rm", "cannot remove '%s': %s", n, ErrText(err))
				status = 1
			}
			continue
		}
		if info.IsDir() {
			if !recursive && flags['d'] == "" {
				e.errf("rm", "cannot remove '%s': Is a directory", n)
				status = 1
				continue
			}
			if abs == "/" || path.Base(n) == "." || path.Base(n) == ".." {
				e.errf("rm", "refusing to remove '.' or '..' directory: skipping '%s'", n)
				status = 1
				continue
			}
			if recursive {
				err = e.FS.RemoveAll(abs)
			} else {
				err = e.FS.Remove(abs)
			}
		} else {
			err = e.FS.Remove(abs)
		}
		if err != nil {
			e.errf("rm", "cannot remove '%s': %s", n, ErrText(err))
			status = 1
		}
	}
	return status
}

func rmdir(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "pv", "")
	if err != nil {
		return e.usage("rmdir", "%v", err)
	}
	if len(names) == 0 {
		return e.usage("rmdir", "missing operand")
	}
	status := 0
	for _, n := range names {
		for {
			abs := e.Abs(n)
			info, err := e.FS.Stat(abs, false)
			if err == nil && !info.IsDir() {
				e.errf("rmdir", "failed to remove '%s': Not a directory", n)
				status = 1
				break
			}
			if err == nil {
				err = e.FS.Remove(abs)
			}
			if err != nil {
				e.errf("rmdir", "failed to remove '%s': %s", n, ErrText(err))
				status = 1
				break
			}
			if flags['p'] == "" {
				break
			}
			n = path.Dir(n)
			if n == "." || n == "/" {
				break
			}
		}
	}
	return status
}

// target resolves where a source goes for mv/cp: into dst when dst is a directory.
func (e *Env) target(src, dst string, dstIsDir bool) string {
	if dstIsDir {
		return path.Join(e.Abs(dst), path.Base(src))
	}
	return e.Abs(dst)
}

func mv(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "fivnT", "t")
	if err != nil {
		return e.usage("mv", "%v", err)
	}
	if t, ok := flags['t']; ok {
		names = append(names, t)
	}
	if len(names) < 2 {
		return e.usage("mv", "missing file operand")
	}
	dst := names[len(names)-1]
	srcs := names[:len(names)-1]
	info, err := e.FS.Stat(e.Abs(dst), true)
	dstIsDir := err == nil && info.IsDir() && flags['T'] == ""
	if len(srcs) > 1 && !dstIsDir {
		return e.fail("mv", "target '%s' is not a directory", dst)
	}
	status := 0
	for _, s := range srcs {
		to := e.target(s, dst, dstIsDir)
		if flags['n'] != "" {
			if _, err := e.FS.Stat(to, false); err == nil {
				continue
			}
		}
		if err := e.FS.Rename(e.Abs(s), to); err != nil {
			e.errf("mv", "cannot move '%s' to '%s': %s", s, dst, ErrText(err))
			status = 1
		}
	}
	return status
}

func cp(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "rRafpvnLPdT", "t")
	if err != nil {
		return e.usage("cp", "%v", err)
	}
	if t, ok := flags['t']; ok {
		names = append(names, t)
	}
	if len(names) < 2 {
		return e.usage("cp", "missing file operand")
	}
	recursive := flags['r'] != "" || flags['R'] != "" || flags['a'] != ""
	preserve := flags['p'] != "" || flags['a'] != ""
	dst := names[len(names)-1]
	srcs := names[:len(names)-1]
	info, err := e.FS.Stat(e.Abs(dst), true)
	dstIsDir := err == nil && info.IsDir() && flags['T'] == ""
	if len(srcs) > 1 && !dstIsDir {
		return e.fail("cp", "target '%s' is not a directory", dst)
	}
	status := 0
	var copyOne func(src, to string) error
	copyOne = func(src, to string) error {
		if e.Ctx.Err() != nil {
			return e.Ctx.Err()
		}
		si, err := e.FS.Stat(src, true)
		if err != nil {
			return err
		}
		if si.IsDir() {
			if !recursive {
				return fmt.Errorf("-r not specified; omitting directory")
			}
			if to == src || strings.HasPrefix(to, src+"/") {
				return fmt.Errorf("cannot copy a directory into itself")
			}
			if err := e.FS.MkdirAll(to, si.Mode().Perm()); err != nil {
				return err
			}
			ents, err := e.FS.ReadDir(src)
			if err != nil {
				return err
			}
			for _, d := range ents {
				if d.Type()&fs.ModeSymlink != 0 {
					t, err := e.FS.Readlink(path.Join(src, d.Name()))
					if err == nil {
						err = e.FS.Symlink(t, path.Join(to, d.Name()))
					}
					if err != nil {
						return err
					}
					continue
				}
				if err := copyOne(path.Join(src, d.Name()), path.Join(to, d.Name())); err != nil {
					return err
				}
			}
			return nil
		}
		if flags['n'] != "" {
			if _, err := e.FS.Stat(to, false); err == nil {
				return nil
			}
		}
		data, err := e.FS.Content(src)
		if err != nil {
			return err
		}
		if err := e.FS.WriteFile(to, data, si.Mode().Perm()); err != nil {
			return err
		}
		if preserve {
			_ = e.FS.Chtimes(to, si.ModTime())
		}
		return nil
	}
	for _, s := range srcs {
		if err := copyOne(e.Abs(s), e.target(s, dst, dstIsDir)); err != nil {
			if e.Ctx.Err() != nil {
				return 130
			}
			e.errf("cp", "cannot copy '%s': %s", s, ErrText(err))
			status = 1
		}
	}
	return status
}

func touch(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "cam", "dr")
	if err != nil {
		return e.usage("touch", "%v", err)
	}
	if len(names) == 0 {
		return e.usage("touch", "missing file operand")
	}
	when := time.Now()
	if d, ok := flags['d']; ok {
		t, err := parseDate(d)
		if err != nil {
			return e.usage("touch", "invalid date format '%s'", d)
		}
		when = t
	}
	if r, ok := flags['r']; ok {
		info, err := e.FS.Stat(e.Abs(r), true)
		if err != nil {
			return e.fail("touch", "failed to get attributes of '%s': %s", r, ErrText(err))
		}
		when = info.ModTime()
	}
	status := 0
	for _, n := range names {
		abs := e.Abs(n)
		if _, err := e.FS.Stat(abs, true); err != nil {
			if flags['c'] != "" {
				continue
			}
			f, err := e.FS.OpenFile(abs, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				e.errf("touch", "cannot touch '%s': %s", n, ErrText(err))
				status = 1
				continue
			}
			f.Close()
		}
		if err := e.FS.Chtimes(abs, when); err != nil {
			e.errf("touch", "cannot touch '%s': %s", n, ErrText(err))
			status = 1
		}
	}
	return status
}

func parseDate(s string) (time.Time, error) {
	if strings.HasPrefix(s, "@") {
		n, err := strconv.ParseInt(s[1:], 10, 64)
		return time.Unix(n, 0), err
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad date")
}

func ln(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "sfnvrT", "")
	if err != nil {
		return e.usage("ln", "%v", err)
	}
	if flags['s'] == "" {
		return e.fail("ln", "hard links are not supported in the memory sandbox; use ln -s")
	}
	if len(names) == 0 {
		return e.usage("ln", "missing file operand")
	}
	if len(names) == 1 {
		names = append(names, path.Base(names[0]))
	}
	dst := names[len(names)-1]
	targets := names[:len(names)-1]
	info, err := e.FS.Stat(e.Abs(dst), flags['n'] == "")
	dstIsDir := err == nil && info.IsDir() && flags['T'] == ""
	if len(targets) > 1 && !dstIsDir {
		return e.fail("ln", "target '%s' is not a directory", dst)
	}
	status := 0
	for _, t := range targets {
		link := e.Abs(dst)
		if dstIsDir {
			link = path.Join(link, path.Base(t))
		}
		if flags['f'] != "" {
			if li, err := e.FS.Stat(link, false); err == nil && !li.IsDir() {
				_ = e.FS.Remove(link)
			}
		}
		if err := e.FS.Symlink(t, link); err != nil {
			e.errf("ln", "failed to create symbolic link '%s': %s", dst, ErrText(err))
			status = 1
		}
	}
	return status
}

func basename(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "az", "s")
	if err != nil {
		return e.usage("basename", "%v", err)
	}
	if len(names) == 0 {
		return e.usage("basename", "missing operand")
	}
	suffix := flags['s']
	if flags['a'] == "" && suffix == "" && len(names) == 2 {
		suffix, names = names[1], names[:1]
	}
	for _, n := range names {
		b := n
		if strings.Trim(b, "/") == "" && b != "" {
			b = "/"
		} else {
			b = path.Base(strings.TrimRight(b, "/"))
		}
		if suffix != "" && b != suffix {
			b = strings.TrimSuffix(b, suffix)
		}
		fmt.Fprintln(e.Stdout, b)
	}
	return 0
}

func dirname(e *Env, args []string) int {
	_, names, err := parseFlags(args[1:], "z", "")
	if err != nil {
		return e.usage("dirname", "%v", err)
	}
	if len(names) == 0 {
		return e.usage("dirname", "missing operand")
	}
	for _, n := range names {
		d := n
		if t := strings.TrimRight(d, "/"); t != "" {
			d = t
		}
		d = path.Dir(d)
		fmt.Fprintln(e.Stdout, d)
	}
	return 0
}

func readlink(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "fenmqsvz", "")
	if err != nil {
		return e.usage("readlink", "%v", err)
	}
	canon := flags['f'] != "" || flags['e'] != "" || flags['m'] != ""
	status := 0
	for _, n := range names {
		var out string
		var err error
		if canon {
			out, err = e.FS.Resolve(e.Abs(n), "/", true)
		} else {
			out, err = e.FS.Readlink(e.Abs(n))
		}
		if err != nil {
			status = 1
			continue
		}
		fmt.Fprintln(e.Stdout, out)
	}
	return status
}

func realpath(e *Env, args []string) int {
	_, names, err := parseFlags(args[1:], "emsqz", "")
	if err != nil {
		return e.usage("realpath", "%v", err)
	}
	status := 0
	for _, n := range names {
		out, err := e.FS.Resolve(e.Abs(n), "/", true)
		if err != nil {
			e.errf("realpath", "%s: %s", n, ErrText(err))
			status = 1
			continue
		}
		fmt.Fprintln(e.Stdout, out)
	}
	return status
}

var tempCounter int64

func mktemp(e *Env, args []string) int {
	flags, names, err := parseFlags(args[1:], "dqu", "p")
	if err != nil {
		return e.usage("mktemp", "%v", err)
	}
	tmpl := "tmp.XXXXXXXXXX"
	if len(names) > 0 {
		tmpl = names[0]
	}
	dir := flags['p']
	if dir == "" && (len(names) == 0 || !strings.Contains(tmpl, "/")) {
		dir = e.Getenv("TMPDIR")
		if dir == "" {
			dir = "/tmp"
		}
	}
	xs := len(tmpl) - len(strings.TrimRight(tmpl, "X"))
	if xs < 3 {
		return e.fail("mktemp", "too few X's in template '%s'", tmpl)
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for try := 0; try < 100; try++ {
		tempCounter++
		seed := uint64(time.Now().UnixNano()) ^ uint64(tempCounter)*0x9E3779B97F4A7C15
		b := []byte(tmpl[:len(tmpl)-xs])
		for i := 0; i < xs; i++ {
			b = append(b, letters[seed%uint64(len(letters))])
			seed = seed/uint64(len(letters)) ^ (seed << 7)
		}
		p := string(b)
		if dir != "" {
			p = path.Join(dir, p)
		}
		abs := e.Abs(p)
		var err error
		if flags['d'] != "" {
			err = e.FS.Mkdir(abs, 0o700)
		} else {
			var f File
			f, err = e.FS.OpenFile(abs, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err == nil {
				f.Close()
			}
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return e.fail("mktemp", "failed to create file via template '%s': %s", tmpl, ErrText(err))
		}
		fmt.Fprintln(e.Stdout, p)
		return 0
	}
	return e.fail("mktemp", "failed to create file via template '%s'", tmpl)
}

func chmod(e *Env, args []string) int {
	rest := args[1:]
	recursive := false
	for len(rest) > 0 && (rest[0] == "-R" || rest[0] == "-v" || rest[0] == "-f") {
		recursive = recursive || rest[0] == "-R"
		rest = rest[1:]
	}
	if len(rest) < 2 {
		return e.usage("chmod", "missing operand")
	}
	spec := rest[0]
	status := 0
	apply := func(abs, name string) {
		info, err := e.FS.Stat(abs, true)
		if err != nil {
			e.errf("chmod", "cannot access '%s': %s", name, ErrText(err))
			status = 1
			return
		}
		perm, ok := chmodSpec(spec, info.Mode().Perm())
		if !ok {
			e.errf("chmod", "invalid mode: '%s'", spec)
			status = 1
			return
		}
		_ = e.FS.Chmod(abs, perm)
	}
	for _, n := range rest[1:] {
		abs := e.Abs(n)
		apply(abs, n)
		if recursive {
			ents, _ := e.FS.Walk(abs)
			for _, en := range ents {
				if en.Info.Mode()&fs.ModeSymlink == 0 {
					apply(en.Path, en.Path)
				}
			}
		}
	}
	return status
}

// chmodSpec applies an octal or symbolic (u+x,go-w,a=r) mode.
func chmodSpec(spec string, cur fs.FileMode) (fs.FileMode, bool) {
	if v, err := strconv.ParseUint(spec, 8, 32); err == nil {
		return fs.FileMode(v) & 0o7777, true
	}
	m := cur
	for _, part := range strings.Split(spec, ",") {
		i := 0
		var who fs.FileMode
		for i < len(part) && strings.IndexByte("ugoa", part[i]) >= 0 {
			switch part[i] {
			case 'u':
				who |= 0o700
			case 'g':
				who |= 0o070
			case 'o':
				who |= 0o007
			case 'a':
				who |= 0o777
			}
			i++
		}
		if who == 0 {
			who = 0o777
		}
		if i >= len(part) || strings.IndexByte("+-=", part[i]) < 0 {
			return 0, false
		}
		op := part[i]
		var bits fs.FileMode
		for _, c := range part[i+1:] {
			switch c {
			case 'r':
				bits |= 0o444
			case 'w':
				bits |= 0o222
			case 'x', 'X':
				bits |= 0o111
			default:
				return 0, false
			}
		}
		bits &= who
		switch op {
		case '+':
			m |= bits
		case '-':
			m &^= bits
		case '=':
			m = m&^who | bits
		}
	}
	return m, true
}
