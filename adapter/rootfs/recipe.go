// Package rootfs owns the recipe of the sandbox root file system that the docker image
// (adapter/docker/image) and the oci adapter (adapter/oci) share: busybox-static with every applet
// installed as a link (sh, cat, ls, kill, nc, wget, ...), ripgrep with the shared libraries and
// dynamic loader it needs, the sandbox agent (compiled from the source embedded in package agent
// with the Go toolchain, statically linked; see agent.Path), /etc/passwd and /etc/group with a
// non-root user "sandbox" (UID:GID 1000:1000), an empty /workspace and /home/sandbox (the
// commands' HOME, adapter.DefaultHome) owned by that user and a world-writable /tmp. Only files of the host are used: no registry is contacted.
//
// Archive assembles it as a tar, deterministically (sorted entries, fixed times and owners), so
// the same host files give the same content hash. The docker image imports that archive;
// Materialize unpacks it once per content hash into a read-only directory that every oci sandbox
// uses as its root.
package rootfs

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
)

// The sandbox user of the root file system, its home and PATH. Commands run as this user.
const (
	UID     = 1000
	GID     = 1000
	User    = "1000:1000"
	Home    = adapter.DefaultHome
	DefPath = "/usr/local/bin:/usr/bin:/bin"
)

// Options choose the host files of the recipe. The zero value takes /bin/busybox, the rg found on
// PATH, and compiles the agent.
type Options struct {
	// Busybox is the path of a statically linked busybox; "" is /bin/busybox.
	Busybox string
	// Ripgrep is the path of rg; "" looks it up on PATH.
	Ripgrep string
	// Agent is the path of a prebuilt, statically linked sandboxer-agent for the host's
	// architecture; "" compiles it from the embedded source with the Go toolchain (the go command
	// on PATH, or the one of the GOROOT this program was built with).
	Agent string
	// NoAgent leaves the agent out (the docker adapter then runs a daemon exec per call; the oci
	// adapter needs the agent).
	NoAgent bool
}

func (o Options) busybox() string {
	if o.Busybox == "" {
		return "/bin/busybox"
	}
	return o.Busybox
}

func (o Options) ripgrep() (string, error) {
	if o.Ripgrep != "" {
		return o.Ripgrep, nil
	}
	p, err := exec.LookPath("rg")
	if err != nil {
		return "", fmt.Errorf("ripgrep (rg) not found on PATH: install it (apt-get install ripgrep): %w", err)
	}
	return p, nil
}

// epoch is the modification time of every entry: a fixed time keeps the archive reproducible.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type entry struct {
	hdr  tar.Header
	data []byte
}

// Archive returns the root file system as an uncompressed tar.
func Archive(o Options) ([]byte, error) {
	bb := o.busybox()
	rg, err := o.ripgrep()
	if err != nil {
		return nil, err
	}
	entries := map[string]*entry{}
	dir := func(p string, mode int64, uid int) {
		entries[p] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: uid}}
	}
	file := func(p string, mode int64, data []byte) {
		entries[p] = &entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data))}, data: data}
	}
	link := func(p, target string) {
		entries[p] = &entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777}}
	}
	for _, d := range []string{"bin", "dev", "etc", "lib", "proc", "root", "sys", "usr", "usr/bin", "usr/local", "usr/local/bin", "var", "run", "mnt"} {
		dir(d, 0o755, 0)
	}
	entries["root"].hdr.Mode = 0o700
	dir("tmp", 0o1777, 0)
	dir("workspace", 0o755, UID)
	// HOME: a mount point in the oci adapter's read-only tree; in the docker image, the sandbox
	// user's, as a volume mounted there copies its owner from the image.
	dir("home", 0o755, 0)
	dir(strings.TrimPrefix(Home, "/"), 0o755, UID)
	// The mount point of the agent's direct streams (the root is read-only).
	dir(strings.TrimPrefix(agent.DirectSandboxDir, "/"), 0o755, 0)

	// busybox and its applets.
	bbData, err := os.ReadFile(bb)
	if err != nil {
		return nil, fmt.Errorf("busybox-static not found at %s (apt-get install busybox-static): %w", bb, err)
	}
	if f, err := elf.NewFile(bytes.NewReader(bbData)); err == nil {
		libs, _ := f.ImportedLibraries()
		f.Close()
		if len(libs) > 0 {
			return nil, fmt.Errorf("%s is dynamically linked; a static busybox is needed (busybox-static)", bb)
		}
	}
	file("bin/busybox", 0o755, bbData)
	out, err := exec.Command(bb, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", bb, err)
	}
	for _, a := range strings.Fields(string(out)) {
		if a == "busybox" || strings.ContainsAny(a, "/[") && a != "[" && a != "[[" {
			continue
		}
		link("bin/"+a, "busybox")
	}

	// ripgrep, its libraries and the dynamic loader, at the paths the loader will look for.
	if err := addELF(rg, "usr/bin/rg", file, link, dir); err != nil {
		return nil, err
	}

	if !o.NoAgent {
		bin, err := agentBinary(o.Agent)
		if err != nil {
			return nil, err
		}
		file(strings.TrimPrefix(agent.Path, "/"), 0o755, bin)
	}

	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:"+Home+":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"))
	file("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\n"))
	// Mount points of the oci adapter (a runtime cannot create them in a read-only tree); docker
	// mounts its own over them.
	file("etc/hosts", 0o644, []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"))
	file("etc/resolv.conf", 0o644, nil)

	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		e.hdr.ModTime = epoch
		e.hdr.Format = tar.FormatPAX
		if e.hdr.Typeflag != tar.TypeDir && e.hdr.Uid == 0 {
			e.hdr.Uid, e.hdr.Gid = 0, 0
		}
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// addELF adds the executable src at dst with the dynamic loader it names and every shared library
// it needs (transitively), found in the standard library directories of the host, as a dynamic
// loader would find them.
func addELF(src, dst string, file func(string, int64, []byte), link func(string, string), dir func(string, int64, int)) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	file(dst, 0o755, data)
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	defer f.Close()
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return err
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return nil // static
	}
	searchDirs := []string{"/lib/" + multiarch(f), "/usr/lib/" + multiarch(f), "/lib64", "/usr/lib64", "/lib", "/usr/lib"}
	added := map[string]bool{}
	addFile := func(hostPath, imagePath string) error {
		real, err := filepath.EvalSymlinks(hostPath)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(real)
		if err != nil {
			return err
		}
		p := strings.TrimPrefix(imagePath, "/")
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			dir(d, 0o755, 0)
		}
		file(p, 0o755, b)
		return nil
	}
	if err := addFile(interp, interp); err != nil {
		return fmt.Errorf("dynamic loader %s of %s: %w", interp, src, err)
	}
	queue, _ := f.ImportedLibraries()
	for len(queue) > 0 {
		lib := queue[0]
		queue = queue[1:]
		if added[lib] {
			continue
		}
		added[lib] = true
		found := ""
		for _, d := range searchDirs {
			if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
				found = filepath.Join(d, lib)
				break
			}
		}
		if found == "" {
			return fmt.Errorf("shared library %s of %s not found in %v", lib, src, searchDirs)
		}
		if found == interp || filepath.Base(found) == filepath.Base(interp) {
			continue
		}
		if err := addFile(found, found); err != nil {
			return fmt.Errorf("library %s: %w", found, err)
		}
		lf, err := elf.Open(found)
		if err != nil {
			return fmt.Errorf("library %s: %w", found, err)
		}
		more, _ := lf.ImportedLibraries()
		lf.Close()
		queue = append(queue, more...)
	}
	_ = link
	return nil
}

// multiarch names the Debian multiarch directory of an ELF file's machine.
func multiarch(f *elf.File) string {
	switch f.Machine {
	case elf.EM_X86_64:
		return "x86_64-linux-gnu"
	case elf.EM_AARCH64:
		return "aarch64-linux-gnu"
	case elf.EM_386:
		return "i386-linux-gnu"
	case elf.EM_ARM:
		return "arm-linux-gnueabihf"
	}
	return ""
}

// AgentBinary returns the agent executable: the statically linked file at path, or, for "", one
// compiled from agent.Source (once per process). The image build adds it to images it did not
// assemble itself (adapter/docker/image's FromRootfs and FromDockerfile).
func AgentBinary(path string) ([]byte, error) { return agentBinary(path) }

// agentBinary returns the agent executable: the file at path, or one compiled from agent.Source
// (once per process). Either way it must be statically linked: the tree has no C library for it.
func agentBinary(path string) ([]byte, error) {
	if path == "" {
		return compiledAgent()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return data, checkStatic(path, data)
}

// AgentFile returns the path of the agent executable (compiled once per process, as
// compiledAgent) kept in dir under a name of its content's hash, written atomically the first
// time, mode 0755: what an adapter mounts read-only into a container whose image has no agent.
func AgentFile(dir string) (string, error) {
	data, err := compiledAgent()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	p := filepath.Join(dir, "sandboxer-agent-"+hex.EncodeToString(sum[:8]))
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".agent-")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o755)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	return p, nil
}

// compiledAgent compiles the embedded agent source the first time it is called and returns the
// same binary afterwards (a build takes seconds; the source cannot change within a process).
var compiledAgent = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sandboxer-agent-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, err := compileAgent(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return data, checkStatic(path, data)
})

func checkStatic(path string, data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("agent %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("agent %s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// compileAgent writes the embedded agent source into dir as a module of its own (standard library
// only) and builds it there, reproducibly (-trimpath, no VCS stamp), for the host's architecture.
func compileAgent(dir string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, serr := os.Stat(goCmd); serr != nil {
			return "", fmt.Errorf("building the sandbox agent needs the Go toolchain (go on PATH); " +
				"or give a prebuilt static agent (--agent PATH), or build without it (--no-agent: every call is then a daemon exec)")
		}
	}
	const pkgDir = "adapter/agent"
	err = fs.WalkDir(agent.Source, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := agent.Source.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, pkgDir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("agent source: %w", err)
	}
	gomod := "module github.com/sandboxer/sandboxer\n\ngo 1.24\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "sandboxer-agent")
	cmd := exec.Command(goCmd, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, "./"+pkgDir+"/cmd/sandboxer-agent")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the sandbox agent: %v: %s", err, b)
	}
	return out, nil
}
