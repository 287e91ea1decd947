package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
	"github.com/sandboxer/sandboxer/errs"
)

// Values of LabelImage: what an image was built from.
const (
	KindSandbox    = "sandbox"    // the default recipe (host busybox and ripgrep)
	KindRootfs     = "rootfs"     // Options.FromRootfs
	KindDockerfile = "dockerfile" // Options.FromDockerfile
)

// fromRecipe changes whenever what FromRootfs or FromDockerfile adds to an image changes, so that
// an image made by an older sandboxer is not taken as up to date.
const fromRecipe = "from-recipe-1"

const op = "image build"

// validate checks that o's fields go together.
func (o Options) validate() error {
	from := o.FromRootfs != "" || o.FromDockerfile != ""
	switch {
	case o.FromRootfs != "" && o.FromDockerfile != "":
		return errs.New(errs.InvalidInput, op, "", "FromRootfs (--from-rootfs) and FromDockerfile (--from-dockerfile) exclude each other")
	case from && (o.Busybox != "" || o.Ripgrep != "" || o.NoAgent):
		return errs.New(errs.InvalidInput, op, "", "Busybox, Ripgrep and NoAgent (--busybox, --rg, --no-agent) are options of the default image; "+
			"an image built from a root file system or a Dockerfile always gets the agent")
	case len(o.Changes) > 0 && o.FromRootfs == "":
		return errs.New(errs.InvalidInput, op, "", "Changes (--change) go with FromRootfs (--from-rootfs) only; a Dockerfile says them itself")
	case (o.Context != "" || len(o.BuildArgs) > 0) && o.FromDockerfile == "":
		return errs.New(errs.InvalidInput, op, "", "Context and BuildArgs (--context, --build-arg) go with FromDockerfile (--from-dockerfile) only")
	case from && o.Tag == "":
		return errs.New(errs.InvalidInput, op, "", "an image built from a root file system or a Dockerfile needs a tag of its own (--tag)")
	}
	if o.Tag != "" {
		ref, err := reference.ParseNormalizedNamed(o.Tag)
		if err != nil {
			return errs.New(errs.InvalidInput, op, o.Tag, "not a valid image tag: %v", err)
		}
		if _, ok := ref.(reference.Digested); ok {
			return errs.New(errs.InvalidInput, op, o.Tag, "a tag names no digest (@sha256:...)")
		}
	}
	return nil
}

// previous is the image tag names before a build ("" and nil when there is none). An image
// without LabelImage (not made by this package, nor built on an image it made) is refused unless
// force: a build must not take a user's tag away by accident.
func previous(ctx context.Context, cli *client.Client, tag string, force bool) (id string, labels map[string]string, err error) {
	ins, err := cli.ImageInspect(ctx, tag)
	if cerrdefs.IsNotFound(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, errs.Wrap(errs.SandboxUnavailable, op, tag, fmt.Errorf("inspect image: %w", err))
	}
	if ins.Config != nil {
		labels = ins.Config.Labels
	}
	if labels[LabelImage] == "" && !force {
		return "", nil, errs.New(errs.InvalidInput, op, tag,
			"the tag names an image that sandboxer image build did not make: choose another --tag, or pass --force to move this one to the new image")
	}
	return ins.ID, labels, nil
}

// start opens the client of o.Host and returns what o.Tag names before the build (previous).
func start(ctx context.Context, o Options) (cli *client.Client, oldID string, oldLabels map[string]string, err error) {
	if cli, err = newClient(o.Host); err != nil {
		return nil, "", nil, err
	}
	if oldID, oldLabels, err = previous(ctx, cli, o.Tag, o.Force); err != nil {
		cli.Close()
		return nil, "", nil, err
	}
	return cli, oldID, oldLabels, nil
}

// finish returns the id of the image o.Tag names after a build that moved it from oldID, and
// drops the previous one (dropPrevious).
func finish(ctx context.Context, cli *client.Client, tag, oldID string, oldLabels map[string]string, progress func(string)) (string, error) {
	ins, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", errs.Wrap(errs.SandboxUnavailable, op, tag, fmt.Errorf("inspect image: %w", err))
	}
	dropPrevious(ctx, cli, oldID, oldLabels, ins.ID)
	progress("built " + tag + " " + ins.ID)
	return ins.ID, nil
}

// writeFile writes a regular file of root's to tw, with the build's fixed time.
func writeFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// upToDate reports whether the image the tag names (oldID) already has the content hash, and
// Force is not set.
func upToDate(o Options, oldID string, oldLabels map[string]string, hash string, progress func(string)) bool {
	if oldID == "" || o.Force || oldLabels[LabelContentHash] != hash {
		return false
	}
	progress(o.Tag + " is up to date")
	return true
}

// dropPrevious removes the image the tag named before the build when this package made it
// (oldLabels has LabelImage), the tag moved, and nothing else names it: no dangling image piles up
// per rebuild. One that a container or another image still uses is left (the daemon refuses); a
// user's image that Force took the tag from is left too.
func dropPrevious(ctx context.Context, cli *client.Client, oldID string, oldLabels map[string]string, newID string) {
	if oldID == "" || oldID == newID || oldLabels[LabelImage] == "" {
		return
	}
	if ins, err := cli.ImageInspect(ctx, oldID); err != nil || len(ins.RepoTags) > 0 {
		return
	}
	cli.ImageRemove(ctx, oldID, client.ImageRemoveOptions{PruneChildren: true})
}

// buildFromRootfs imports the root file system o.FromRootfs (a directory or a tar file) with the
// agent added as o.Tag.
func buildFromRootfs(ctx context.Context, o Options, progress func(string)) (Result, error) {
	res := Result{Tag: o.Tag}
	fi, err := os.Stat(o.FromRootfs)
	if errors.Is(err, fs.ErrNotExist) {
		return res, errs.New(errs.NotFound, op, o.FromRootfs, "no root file system there (want a directory or a tar file)")
	}
	if err != nil {
		return res, errs.Wrap(errs.InvalidInput, op, o.FromRootfs, err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return res, errs.New(errs.InvalidInput, op, o.FromRootfs, "want a directory or a tar file")
	}
	cli, oldID, oldLabels, err := start(ctx, o)
	if err != nil {
		return res, err
	}
	defer cli.Close()
	bin, err := rootfs.AgentBinary(o.Agent)
	if err != nil {
		return res, err
	}
	// The hash is of the archive and the change lines.
	hashChanges := func(w io.Writer) {
		for _, c := range o.Changes {
			fmt.Fprintf(w, "\x00change\x00%s", c)
		}
	}
	progress("hashing " + o.FromRootfs)
	h := sha256.New()
	if err := writeRootfs(h, o.FromRootfs, fi.IsDir(), bin); err != nil {
		return res, err
	}
	hashChanges(h)
	hash := hex.EncodeToString(h.Sum(nil))
	res.ContentHash = hash
	if upToDate(o, oldID, oldLabels, hash, progress) {
		res.ID = oldID
		return res, nil
	}

	progress("importing " + o.Tag)
	changes := append(slices.Clone(o.Changes),
		"LABEL "+LabelImage+"="+KindRootfs,
		"LABEL "+LabelAgent+"="+agent.Version,
		"LABEL "+LabelContentHash+"="+hash)
	pr, pw := io.Pipe()
	h2 := sha256.New()
	done := make(chan error, 1)
	go func() {
		// The archive goes to the daemon and, with the change lines, into the hash again.
		err := writeRootfs(io.MultiWriter(pw, h2), o.FromRootfs, fi.IsDir(), bin)
		hashChanges(h2)
		pw.CloseWithError(err)
		done <- err
	}()
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: pr, SourceName: "-"}, o.Tag,
		client.ImageImportOptions{Changes: changes, Message: "sandboxer image build --from-rootfs"})
	if err == nil {
		err = readJSONMessages(rc, progress)
		rc.Close()
	}
	pr.CloseWithError(errors.New("import ended"))
	if werr := <-done; werr != nil {
		return res, werr
	}
	var se streamError
	if errors.As(err, &se) || cerrdefs.IsInvalidArgument(err) { // the daemon refused the archive or a change
		return res, errs.Wrap(errs.InvalidInput, op, o.FromRootfs, fmt.Errorf("import: %w", err))
	}
	if err != nil {
		return res, errs.Wrap(errs.SandboxUnavailable, op, o.Tag, fmt.Errorf("import: %w", err))
	}
	if got := hex.EncodeToString(h2.Sum(nil)); got != hash {
		cli.ImageRemove(ctx, o.Tag, client.ImageRemoveOptions{PruneChildren: true})
		return res, errs.New(errs.Conflict, op, o.FromRootfs, "the root file system changed while it was imported: build again")
	}
	if res.ID, err = finish(ctx, cli, o.Tag, oldID, oldLabels, progress); err != nil {
		return res, err
	}
	res.Built = true
	return res, nil
}

// writeRootfs writes the root file system src (a directory, or a tar file plain, gzip or bzip2
// compressed) as one tar to w, with the agent at agent.Path in place of whatever src has there
// (and the directories above it where src has none), last.
func writeRootfs(w io.Writer, src string, isDir bool, agentBin []byte) error {
	tw := tar.NewWriter(w)
	seen := map[string]bool{}
	at := agentName()
	if isDir {
		skip := func(name string, _ bool) (bool, bool, error) { return name == at, false, nil }
		if err := writeTree(tw, src, treeOptions{oneFS: true, seen: seen, skip: skip}); err != nil {
			return errs.Wrap(errs.InvalidInput, op, src, err)
		}
	} else {
		f, err := os.Open(src)
		if err != nil {
			return errs.Wrap(errs.InvalidInput, op, src, err)
		}
		defer f.Close()
		r, err := decompress(f)
		if err != nil {
			return errs.Wrap(errs.InvalidInput, op, src, err)
		}
		if err := copyTar(tw, tar.NewReader(r), func(n string) bool { return n == at }, seen); err != nil {
			return errs.Wrap(errs.InvalidInput, op, src, fmt.Errorf("not a tar archive (plain, gzip or bzip2): %w", err))
		}
	}
	if len(seen) == 0 {
		return errs.New(errs.InvalidInput, op, src, "the root file system holds nothing")
	}
	var parents []string
	for d := path.Dir(at); d != "."; d = path.Dir(d) {
		parents = append(parents, d)
	}
	slices.Reverse(parents)
	for _, d := range parents {
		if !seen[d] { // an existing directory, or a link, is left as it is
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return err
			}
		}
	}
	if err := writeFile(tw, at, 0o755, agentBin); err != nil {
		return err
	}
	return tw.Close()
}

// epoch is the modification time of what the build adds: a fixed time keeps it reproducible.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// decompress returns r uncompressed: gzip and bzip2 are read; xz and zstd are named in the error.
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, _ := br.Peek(6)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		return gzip.NewReader(br)
	case bytes.HasPrefix(magic, []byte("BZh")):
		return bzip2.NewReader(br), nil
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return nil, errors.New("xz-compressed: decompress it first (xz -d), or give a tar, tar.gz or tar.bz2")
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return nil, errors.New("zstd-compressed: decompress it first (zstd -d), or give a tar, tar.gz or tar.bz2")
	}
	return br, nil
}

// buildFromDockerfile builds o.FromDockerfile with the daemon's builder, then the agent on top as
// o.Tag.
func buildFromDockerfile(ctx context.Context, o Options, progress func(string)) (res Result, err error) {
	res = Result{Tag: o.Tag}
	dockerfile, err := filepath.Abs(o.FromDockerfile)
	if err != nil {
		return res, errs.Wrap(errs.InvalidInput, op, o.FromDockerfile, err)
	}
	if fi, err := os.Stat(dockerfile); errors.Is(err, fs.ErrNotExist) {
		return res, errs.New(errs.NotFound, op, o.FromDockerfile, "no Dockerfile there")
	} else if err != nil || !fi.Mode().IsRegular() {
		return res, errs.New(errs.InvalidInput, op, o.FromDockerfile, "not a Dockerfile (a regular file): %v", err)
	}
	dir := cmp.Or(o.Context, filepath.Dir(dockerfile))
	if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return res, errs.New(errs.NotFound, op, dir, "no build context there")
	} else if err != nil || !fi.IsDir() {
		return res, errs.New(errs.InvalidInput, op, dir, "the build context is not a directory: %v", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return res, errs.Wrap(errs.InvalidInput, op, o.Context, err)
	}
	cx, err := newBuildContext(dir, dockerfile)
	if err != nil {
		return res, err
	}
	args := map[string]*string{}
	for _, a := range o.BuildArgs {
		k, v, ok := strings.Cut(a, "=")
		if !ok { // KEY alone: its value in this environment, as docker build has it
			if ev, set := os.LookupEnv(k); set {
				v, ok = ev, true
			}
		}
		if ok {
			args[k] = &v
		} else {
			args[k] = nil
		}
	}

	cli, oldID, oldLabels, err := start(ctx, o)
	if err != nil {
		return res, err
	}
	defer cli.Close()

	progress("building " + o.FromDockerfile)
	baseID, err := runBuild(ctx, cli, cx.write, client.ImageBuildOptions{
		Dockerfile: cx.dockerfile, BuildArgs: args, NoCache: o.Force}, o.FromDockerfile, progress)
	if err != nil {
		return res, err
	}
	// The Dockerfile's image is a parent of the result; when the build stops short of that, it
	// is removed (unless something else names or uses it: then the daemon refuses).
	defer func() {
		if !res.Built && res.ID == "" {
			if ins, err := cli.ImageInspect(ctx, baseID); err == nil && len(ins.RepoTags) == 0 {
				cli.ImageRemove(context.WithoutCancel(ctx), baseID, client.ImageRemoveOptions{PruneChildren: true})
			}
		}
	}()
	base, err := cli.ImageInspect(ctx, baseID)
	if err != nil {
		return res, errs.Wrap(errs.SandboxUnavailable, op, baseID, fmt.Errorf("inspect image: %w", err))
	}
	if oldID != "" {
		hist, err := cli.ImageHistory(ctx, baseID)
		if err != nil {
			return res, errs.Wrap(errs.SandboxUnavailable, op, baseID, fmt.Errorf("image history: %w", err))
		}
		for _, it := range hist.Items {
			if it.ID == oldID {
				return res, errs.New(errs.InvalidInput, op, o.Tag,
					"the Dockerfile builds on the image this tag names: give the result another --tag")
			}
		}
	}

	bin, err := rootfs.AgentBinary(o.Agent)
	if err != nil {
		return res, err
	}
	sum := sha256.Sum256(bin)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%x", fromRecipe, baseID, sum)
	hash := hex.EncodeToString(h.Sum(nil))
	res.ContentHash = hash
	if upToDate(o, oldID, oldLabels, hash, progress) {
		res.ID = oldID
		return res, nil
	}

	progress("adding the agent")
	if err := addAgent(ctx, cli, baseID, base.Config, bin, hash, o.Tag); err != nil {
		return res, err
	}
	id, err := finish(ctx, cli, o.Tag, oldID, oldLabels, progress)
	if err != nil {
		return res, err
	}
	res.ID, res.Built = id, id != oldID
	return res, nil
}

// addAgent makes the image tag of the image baseID with the agent added as one layer and the
// labels set, its configuration otherwise baseConfig's: a container of it is created (never
// started), the agent copied in, and the container committed with baseConfig. A commit walks the
// container's tree once where the daemon's storage has no cheap diff (fuse-overlayfs, vfs); a
// builder's COPY and LABEL steps would walk it twice, and a FROM would run ONBUILD instructions.
func addAgent(ctx context.Context, cli *client.Client, baseID string, baseConfig any, bin []byte, hash, tag string) error {
	var cfg container.Config
	if baseConfig != nil {
		// The image's configuration as a container's: the same fields, by name.
		b, err := json.Marshal(baseConfig)
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			return errs.Wrap(errs.Internal, op, baseID, fmt.Errorf("the image's configuration: %w", err))
		}
	}
	create := &container.Config{Image: baseID}
	if len(cfg.Cmd) == 0 && len(cfg.Entrypoint) == 0 {
		// A container needs a command, even one never started; the commit's configuration says
		// "no entrypoint" (empty, not nil: the daemon fills a nil one from the container's).
		create.Entrypoint = []string{"/.sandboxer-none"}
		cfg.Entrypoint = []string{}
	}
	cfg.Hostname, cfg.Image = "", ""
	cfg.Labels = maps.Clone(cfg.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.Labels[LabelImage] = KindDockerfile
	cfg.Labels[LabelAgent] = agent.Version
	cfg.Labels[LabelContentHash] = hash

	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: create,
		HostConfig: &container.HostConfig{NetworkMode: "none"}, Name: "sandboxer-image-build-" + randomHex()})
	if err != nil {
		return errs.Wrap(errs.SandboxUnavailable, op, tag, fmt.Errorf("create a container of %s: %w", baseID, err))
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeFile(tw, agentName(), 0o755, bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	// Missing directories above the agent are made (0755, root's); existing ones are left as
	// they are.
	if _, err := cli.CopyToContainer(ctx, c.ID, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		return errs.Wrap(errs.InvalidInput, op, tag, fmt.Errorf("add the agent at %s: %w", agent.Path, err))
	}
	if _, err := cli.ContainerCommit(ctx, c.ID, client.ContainerCommitOptions{Reference: tag,
		Comment: "sandboxer image build: the sandbox agent", Config: &cfg, NoPause: true}); err != nil {
		return errs.Wrap(errs.SandboxUnavailable, op, tag, fmt.Errorf("commit: %w", err))
	}
	return nil
}

// buildContext is a Dockerfile's build context as the docker CLI sends it: the directory's files
// but those its .dockerignore excludes (the Dockerfile and .dockerignore are always sent), owned
// by 0:0; a Dockerfile outside the directory is added under a name of its own, which the
// .dockerignore sent names, so that the daemon drops it from the context once it has read it
// (a COPY . does not see it).
type buildContext struct {
	dir        string
	dockerfile string // its name in the context
	extra      []byte // the Dockerfile's text when it lies outside dir
	ignore     []byte // the .dockerignore's text
	pm         *patternmatcher.PatternMatcher
}

func newBuildContext(dir, dockerfile string) (*buildContext, error) {
	cx := &buildContext{dir: dir}
	var patterns []string
	if data, err := os.ReadFile(filepath.Join(dir, ".dockerignore")); err == nil {
		cx.ignore = data
		if patterns, err = ignorefile.ReadAll(bytes.NewReader(data)); err != nil {
			return nil, errs.Wrap(errs.InvalidInput, op, filepath.Join(dir, ".dockerignore"), err)
		}
	}
	rel, err := filepath.Rel(dir, dockerfile)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		cx.dockerfile = filepath.ToSlash(rel)
		patterns = append(patterns, "!"+cx.dockerfile)
	} else {
		data, err := os.ReadFile(dockerfile)
		if err != nil {
			return nil, errs.Wrap(errs.InvalidInput, op, dockerfile, err)
		}
		sum := sha256.Sum256(data)
		cx.extra = data
		cx.dockerfile = ".sandboxer-dockerfile-" + hex.EncodeToString(sum[:6])
	}
	patterns = append(patterns, "!.dockerignore")
	if cx.pm, err = patternmatcher.New(patterns); err != nil {
		return nil, errs.Wrap(errs.InvalidInput, op, filepath.Join(dir, ".dockerignore"), err)
	}
	return cx, nil
}

// write writes the context's entries to tw.
func (cx *buildContext) write(tw *tar.Writer) error {
	parents := map[string]patternmatcher.MatchInfo{}
	skip := func(name string, isDir bool) (bool, bool, error) {
		if cx.extra != nil && name == ".dockerignore" {
			return true, false, nil // written below
		}
		m, info, err := cx.pm.MatchesUsingParentResults(name, parents[path.Dir(name)])
		if err != nil {
			return false, false, err
		}
		if isDir {
			parents[name] = info
		}
		if !m || !isDir {
			return m, false, nil
		}
		// An excluded directory is walked all the same when a later "!" pattern may take back
		// something below it (the docker CLI's rule).
		for _, p := range cx.pm.Patterns() {
			if p.Exclusion() && strings.HasPrefix(p.String()+"/", name+"/") {
				return true, true, nil
			}
		}
		return true, false, nil
	}
	if err := writeTree(tw, cx.dir, treeOptions{owner0: true, skip: skip}); err != nil {
		return err
	}
	if cx.extra != nil {
		ignore := append(append(slices.Clip(cx.ignore), '\n'), cx.dockerfile+"\n"...)
		if err := writeFile(tw, ".dockerignore", 0o644, ignore); err != nil {
			return err
		}
		return writeFile(tw, cx.dockerfile, 0o644, cx.extra)
	}
	return nil
}

// runBuild runs one build of the daemon's classic builder (the BuildKit API needs a session
// this client does not speak) on the context that fill writes, and returns the image it made.
// what names the build in errors. An error at a FROM step is the base image missing: the builder
// tried to pull it, and no registry is reachable.
func runBuild(ctx context.Context, cli *client.Client, fill func(*tar.Writer) error, bo client.ImageBuildOptions, what string, progress func(string)) (string, error) {
	bo.Version = build.BuilderV1
	bo.Remove, bo.ForceRemove = true, true // no container of a step is left, even on failure
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		tw := tar.NewWriter(pw)
		err := fill(tw)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
		done <- err
	}()
	resp, err := cli.ImageBuild(ctx, pr, bo)
	var id string
	step := ""
	if err == nil {
		var line strings.Builder
		id, err = readBuildMessages(resp.Body, func(s string) {
			line.WriteString(s)
			for {
				l, rest, ok := strings.Cut(line.String(), "\n")
				if !ok {
					break
				}
				line.Reset()
				line.WriteString(rest)
				if l = strings.TrimSpace(l); l != "" {
					if strings.HasPrefix(l, "Step ") {
						if _, instr, ok := strings.Cut(l, " : "); ok {
							step = instr
						}
					}
					progress(l)
				}
			}
		})
		resp.Body.Close()
	}
	pr.CloseWithError(errors.New("build ended"))
	if werr := <-done; werr != nil {
		return "", errs.Wrap(errs.InvalidInput, op, what, fmt.Errorf("build context: %w", werr))
	}
	if err != nil {
		var be streamError
		if !errors.As(err, &be) {
			return "", errs.Wrap(errs.SandboxUnavailable, op, what, fmt.Errorf("build: %w", err))
		}
		if f := strings.Fields(step); len(f) > 1 && strings.EqualFold(f[0], "FROM") {
			return "", errs.New(errs.NotFound, op, what,
				"%s: the base image is not in the docker daemon, and no registry is reachable "+
					"(sandboxer builds FROM local images only: import or build it first, for example with "+
					"sandboxer image build --from-rootfs or docker load): %s", step, be.msg)
		}
		if step != "" {
			return "", errs.New(errs.InvalidInput, op, what, "%s: %s", step, be.msg)
		}
		return "", errs.New(errs.InvalidInput, op, what, "%s", be.msg)
	}
	if id == "" {
		return "", errs.New(errs.Internal, op, what, "the builder named no image")
	}
	return id, nil
}

func randomHex() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
