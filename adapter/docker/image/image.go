// Package image builds sandboxer's sandbox images locally: no registry is contacted. The default
// image's root file system is the recipe of package rootfs (busybox-static, ripgrep, the sandbox
// agent, a non-root user "sandbox" 1000:1000), which the oci adapter shares.
//
// The archive is assembled deterministically (sorted entries, fixed times and owners), so the same
// host files give the same content hash. The image is tagged DefaultTag and carries the hash in
// the label LabelContentHash: Build does nothing when the tagged image already has that hash.
//
// Build also makes an image with a toolchain, with the agent added at agent.Path and the label
// LabelAgent, so that the docker adapter uses the image's own agent rather than bringing the
// host's: from a root file system (Options.FromRootfs: a directory or a tar file, imported as one
// layer) or from a Dockerfile (Options.FromDockerfile: built by the daemon from local images only,
// the agent a layer on top). Those keep the image's own user, environment and PATH.
package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/agent"
	"github.com/sandboxer/sandboxer/adapter/rootfs"
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
	User    = rootfs.User
	Home    = rootfs.Home
	DefPath = rootfs.DefPath
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
	// Force builds even when the tagged image already has the same content hash; with FromRootfs
	// or FromDockerfile it also moves a tag that names an image this package did not make, and
	// builds the Dockerfile without the builder's cache.
	Force bool

	// FromRootfs, when set, builds the image from a root file system instead of the default
	// recipe: a directory, or a tar file (plain, gzip or bzip2 compressed). The tree is imported
	// as it is (owners, modes, set-user-ID bits, times to the second, hard and symbolic links,
	// devices; no extended attributes, no sockets; a directory's tree stays on its file system,
	// as tar --one-file-system), with the agent at agent.Path in place of what it has there. The
	// image's configuration is empty but for Changes and the labels. Tag is required.
	FromRootfs string
	// Changes are Dockerfile instructions applied to a FromRootfs image's configuration, as
	// docker import's --change: "ENV PATH=/usr/local/go/bin:/usr/bin:/bin", "USER 1000",
	// "WORKDIR /workspace".
	Changes []string
	// FromDockerfile, when set, builds the Dockerfile at this path with the daemon's (classic)
	// builder, then adds the agent at agent.Path as one layer on top and the labels (a commit of
	// a container of it with the agent copied in); the rest of the configuration (user,
	// environment, entrypoint, working directory, ...) is the Dockerfile's as built. Its FROM
	// images must be in the daemon: no registry is reachable (an error at a FROM step says so).
	// Tag is required.
	FromDockerfile string
	// Context is FromDockerfile's build context, a directory; "" is the Dockerfile's directory.
	// Its .dockerignore is honoured as docker build does.
	Context string
	// BuildArgs are FromDockerfile's build arguments, KEY=VALUE (KEY alone takes the value of
	// this process's environment).
	BuildArgs []string
	// Progress, when set, receives one line per step.
	Progress func(msg string)
}

// Result says what Build did.
type Result struct {
	Tag         string
	ID          string // image id (sha256:...)
	ContentHash string // sha256 of the root file system archive (FromDockerfile: of the built image's id and the agent)
	Built       bool   // false when the image was already up to date
}

// Build assembles the root file system and imports it into the Docker Engine as o.Tag. It is
// idempotent: an image with the same content hash is left alone unless o.Force is set.
func Build(ctx context.Context, o Options) (Result, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	switch {
	case o.FromRootfs != "":
		return buildFromRootfs(ctx, o, progress)
	case o.FromDockerfile != "":
		return buildFromDockerfile(ctx, o, progress)
	}
	tag := o.Tag
	if tag == "" {
		tag = DefaultTag
	}
	progress("assembling root file system")
	tree, err := Rootfs(o)
	if err != nil {
		return Result{}, err
	}
	sum := sha256.Sum256(tree)
	hash := hex.EncodeToString(sum[:])
	res := Result{Tag: tag, ContentHash: hash}
	progress(fmt.Sprintf("root file system: %d bytes, sha256 %s", len(tree), hash[:12]))

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
		"WORKDIR " + adapter.DefaultWorkspace,
		"ENV PATH=" + DefPath,
		"ENV HOME=" + Home,
		"ENV LANG=C.UTF-8",
		"ENV TZ=UTC",
		`CMD ["/bin/sleep", "infinity"]`,
		"LABEL " + LabelImage + "=" + KindSandbox,
		"LABEL " + LabelContentHash + "=" + hash,
	}
	if !o.NoAgent {
		changes = append(changes, "LABEL "+LabelAgent+"="+agent.Version)
	}
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(tree), SourceName: "-"},
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

// jsonMessage is one message of the engine's progress streams (import, build).
type jsonMessage struct {
	Status string `json:"status"`
	Stream string `json:"stream"` // a build's output
	Aux    *struct {
		ID string `json:"ID"`
	} `json:"aux"` // a build's result
	Error *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	ErrorText string `json:"error"`
}

// streamError is an error the engine reported in a progress stream (what it was asked to do
// failed), as opposed to a broken connection.
type streamError struct{ msg string }

func (e streamError) Error() string { return e.msg }

// readMessages drains a progress stream of the engine, calling each for every message, and
// returns the first error in it (a streamError).
func readMessages(r io.Reader, each func(jsonMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != nil {
			return streamError{m.Error.Message}
		}
		if m.ErrorText != "" {
			return streamError{m.ErrorText}
		}
		each(m)
	}
}

// readJSONMessages drains a progress stream of the engine and returns the first error in it.
func readJSONMessages(r io.Reader, progress func(string)) error {
	return readMessages(r, func(m jsonMessage) {
		if m.Status != "" {
			progress(m.Status)
		}
	})
}

// readBuildMessages drains a build's stream, giving its output to stream, and returns the id of
// the image built.
func readBuildMessages(r io.Reader, stream func(string)) (id string, err error) {
	err = readMessages(r, func(m jsonMessage) {
		if m.Stream != "" {
			stream(m.Stream)
			if s, ok := strings.CutPrefix(strings.TrimSpace(m.Stream), "Successfully built "); ok && id == "" {
				id = s // an older daemon's only word of it (a short id)
			}
		}
		if m.Aux != nil && m.Aux.ID != "" {
			id = m.Aux.ID
		}
	})
	return id, err
}

// Rootfs returns the root file system archive (uncompressed tar) that Build imports: the recipe
// of package rootfs with o's host files.
func Rootfs(o Options) ([]byte, error) {
	return rootfs.Archive(rootfs.Options{Busybox: o.Busybox, Ripgrep: o.Ripgrep, Agent: o.Agent, NoAgent: o.NoAgent})
}

// Ready reports whether docker sandboxes can run here with the default image: the daemon at
// DOCKER_HOST (or the default socket) answers a ping, and the image is built (Build, which does
// nothing when it is up to date). Tests and probes call it before making sandboxes.
func Ready(ctx context.Context) error {
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return err
	}
	_, err = Build(ctx, Options{})
	return err
}
