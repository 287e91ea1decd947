// Package image builds sandboxer's default sandbox image locally, from files of the host: no
// registry is contacted. The root file system holds busybox-static (with every applet installed as
// a link: sh, cat, ls, kill, nc, wget, ...), ripgrep with the shared libraries and dynamic loader
// it needs, the sandbox agent (compiled from the source embedded in package agent with the Go
// toolchain, statically linked; see agent.Path), /etc/passwd and /etc/group with a non-root user "sandbox" (1000:1000), an empty
// /workspace owned by that user and a world-writable /tmp.
//
// The archive is assembled deterministically (sorted entries, fixed times and owners), so the same
// host files give the same content hash. The image is tagged DefaultTag and carries the hash in
// the label LabelContentHash: Build does nothing when the tagged image already has that hash.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter/docker/agent"
)

// DefaultTag is the tag Build gives the image and the docker adapter uses when its Config names
// none. It is a local name: it is never pulled.
const DefaultTag = "sandboxer-sandbox:latest"

// Labels set on the image.
const (
	LabelContentHash = "org.sandboxer.image.content-hash"
	LabelImage       = "org.sandboxer.image"
	// LabelAgent carries the agent protocol version (agent.Version) when the image has the agent.
	LabelAgent = "org.sandboxer.image.agent"
)

// User is the non-root user of the image and its home; commands run as User by default.
const (
	User    = "1000:1000"
	Home    = "/workspace"
	DefPath = "/usr/local/bin:/usr/bin:/bin"
)

// Options configure Build. The zero value builds DefaultTag from /bin/busybox and the rg found on
// PATH, against the daemon named by DOCKER_HOST (or the default socket).
type Options struct {
	// Tag names the image; "" is DefaultTag.
	Tag string
	// Busybox is the path of a statically linked busybox; "" is /bin/busybox.
	Busybox string
	// Ripgrep is the path of rg; "" looks it up on PATH.
	Ripgrep string
	// Host is the Docker Engine endpoint (unix:///var/run/docker.sock, tcp://host:2375); "" uses
	// DOCKER_HOST and the default.
	Host string
	// Agent is the path of a prebuilt, statically linked sandboxer-agent for the image's
	// architecture; "" compiles it from the embedded source with the Go toolchain (the go command
	// on PATH, or the one of the GOROOT this program was built with).
	Agent string
	// NoAgent builds the image without the agent: every call of the docker adapter is then a
	// daemon exec (tens of milliseconds each).
	NoAgent bool
	// Force builds even when the tagged image already has the same content hash.
	Force bool
	// Progress, when set, receives one line per step.
	Progress func(msg string)
}

// Result says what Build did.
type Result struct {
	Tag         string
	ID          string // image id (sha256:...)
	ContentHash string // sha256 of the root file system archive
	Built       bool   // false when the image was already up to date
}

// Build assembles the root file system and imports it into the Docker Engine as o.Tag. It is
// idempotent: an image with the same content hash is left alone unless o.Force is set.
func Build(ctx context.Context, o Options) (Result, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	tag := o.Tag
	if tag == "" {
		tag = DefaultTag
	}
	progress("assembling root file system")
	rootfs, err := Rootfs(o)
	if err != nil {
		return Result{}, err
	}
	sum := sha256.Sum256(rootfs)
	hash := hex.EncodeToString(sum[:])
	res := Result{Tag: tag, ContentHash: hash}
	progress(fmt.Sprintf("root file system: %d bytes, sha256 %s", len(rootfs), hash[:12]))

	cli, err := newClient(o.Host)
	if err != nil {
		return res, err
	}
	defer cli.Close()

	if !o.Force {
		if ins, err := cli.ImageInspect(ctx, tag); err == nil {
			if ins.Config != nil && ins.Config.Labels[LabelContentHash] == hash {
				progress(tag + " is up to date")
				res.ID = ins.ID
				return res, nil
			}
		} else if !cerrdefs.IsNotFound(err) {
			return res, fmt.Errorf("inspect image %s: %w", tag, err)
		}
	}

	progress("importing " + tag)
	changes := []string{
		"USER " + User,
		"WORKDIR " + Home,
		"ENV PATH=" + DefPath,
		"ENV HOME=" + Home,
		"ENV LANG=C.UTF-8",
		"ENV TZ=UTC",
		`CMD ["/bin/sleep", "infinity"]`,
		"LABEL " + LabelImage + "=sandbox",
		"LABEL " + LabelContentHash + "=" + hash,
	}
	if !o.NoAgent {
		changes = append(changes, "LABEL "+LabelAgent+"="+agent.Version)
	}
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(rootfs), SourceName: "-"},
		tag, client.ImageImportOptions{Changes: changes, Message: "sandboxer image build"})
	if err != nil {
		return res, fmt.Errorf("import image %s: %w", tag, err)
	}
	defer rc.Close()
	if err := readJSONMessages(rc, progress); err != nil {
		return res, fmt.Errorf("import image %s: %w", tag, err)
	}
	ins, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return res, fmt.Errorf("inspect image %s: %w", tag, err)
	}
	res.ID = ins.ID
	res.Built = true
	progress("built " + tag + " " + ins.ID)
	return res, nil
}

// Exists reports whether tag ("" is DefaultTag) is present in the engine at host.
func Exists(ctx context.Context, host, tag string) (bool, error) {
	if tag == "" {
		tag = DefaultTag
	}
	cli, err := newClient(host)
	if err != nil {
		return false, err
	}
	defer cli.Close()
	_, err = cli.ImageInspect(ctx, tag)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func newClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	return client.New(opts...)
}

// readJSONMessages drains a progress stream of the engine and returns the first error in it.
func readJSONMessages(r io.Reader, progress func(string)) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Status string `json:"status"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
			ErrorText string `json:"error"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
		if m.ErrorText != "" {
			return errors.New(m.ErrorText)
		}
		if m.Status != "" {
			progress(m.Status)
		}
	}
}

// epoch is the modification time of every entry: a fixed time keeps the archive reproducible.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type entry struct {
	hdr  tar.Header
	data []byte
}

// Rootfs returns the root file system archive (uncompressed tar) that Build imports.
func Rootfs(o Options) ([]byte, error) {
	bb := o.Busybox
	if bb == "" {
		bb = "/bin/busybox"
	}
	rg := o.Ripgrep
	if rg == "" {
		p, err := exec.LookPath("rg")
		if err != nil {
			return nil, fmt.Errorf("ripgrep (rg) not found on PATH: install it (apt-get install ripgrep): %w", err)
		}
		rg = p
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
	for _, d := range []string{"bin", "dev", "etc", "lib", "proc", "root", "sys", "usr", "usr/bin", "usr/local", "usr/local/bin", "var", "run"} {
		dir(d, 0o755, 0)
	}
	entries["root"].hdr.Mode = 0o700
	dir("tmp", 0o1777, 0)
	dir("workspace", 0o755, 1000)

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

	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"))
	file("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\n"))

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

// agentBinary returns the agent executable: the file at path, or one compiled from agent.Source.
// Either way it must be statically linked: the image has no C library for it.
func agentBinary(path string) ([]byte, error) {
	if path == "" {
		var err error
		dir, err := os.MkdirTemp("", "sandboxer-agent-build-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if path, err = compileAgent(dir); err != nil {
			return nil, err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("agent %s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return data, nil
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
	const pkgDir = "adapter/docker/agent"
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
