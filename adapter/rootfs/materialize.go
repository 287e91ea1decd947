package rootfs

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

// recipeVersion changes whenever Archive changes what it puts in the tree, so that a tree made by
// an older recipe is not taken for the current one.
const recipeVersion = "rootfs-recipe-3"

// Tree is a root file system unpacked on the host.
type Tree struct {
	Dir         string // the tree, read-only: <dir>/<ContentHash>
	ContentHash string // sha256 of the archive it was unpacked from (hex)
	Built       bool   // false when an existing tree was reused
}

// Materialize returns the root file system of o unpacked under dir as dir/<content hash>, its
// directories read-only (0555, but /tmp), shared by every caller. The archive is only assembled (and the
// agent compiled, seconds) when dir holds no tree for the same inputs yet: the inputs (the
// recipe's version, the agent's embedded source, and the path, size and modification time of
// busybox, rg and a given agent binary) are hashed into a key, and dir/inputs/<key> names the
// content hash they gave. A changed shared library of rg is not an input: Force rebuilds.
// Several processes may call it at once; a tree appears whole (unpacked aside, then renamed).
func Materialize(dir string, o Options, force bool) (Tree, error) {
	if o.NoAgent {
		return Tree{}, errors.New("rootfs: a materialized tree needs the agent (NoAgent set)")
	}
	key, err := inputKey(o)
	if err != nil {
		return Tree{}, err
	}
	index := filepath.Join(dir, "inputs", key)
	if !force {
		if b, err := os.ReadFile(index); err == nil {
			hash := strings.TrimSpace(string(b))
			if validHash(hash) {
				if fi, err := os.Stat(filepath.Join(dir, hash)); err == nil && fi.IsDir() {
					return Tree{Dir: filepath.Join(dir, hash), ContentHash: hash}, nil
				}
			}
		}
	}
	archive, err := Archive(o)
	if err != nil {
		return Tree{}, err
	}
	sum := sha256.Sum256(archive)
	hash := hex.EncodeToString(sum[:])
	t := Tree{Dir: filepath.Join(dir, hash), ContentHash: hash}
	if _, err := os.Stat(t.Dir); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Tree{}, fmt.Errorf("rootfs: %w", err)
		}
		tmp := filepath.Join(dir, ".unpack-"+randomHex())
		if err := unpack(archive, tmp); err != nil {
			removeTree(tmp)
			return Tree{}, fmt.Errorf("rootfs: unpack: %w", err)
		}
		if err := os.Rename(tmp, t.Dir); err != nil {
			removeTree(tmp)
			// Another process renamed the same tree into place first.
			if fi, serr := os.Stat(t.Dir); serr != nil || !fi.IsDir() {
				return Tree{}, fmt.Errorf("rootfs: %w", err)
			}
		} else {
			t.Built = true
		}
	}
	if err := writeAtomic(index, []byte(hash+"\n")); err != nil {
		return Tree{}, fmt.Errorf("rootfs: %w", err)
	}
	return t, nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// inputKey hashes what Archive reads, cheaply: file identities rather than contents.
func inputKey(o Options) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", recipeVersion, runtime.GOARCH, agent.Version)
	err := fs.WalkDir(agent.Source, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := agent.Source.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("rootfs: agent source: %w", err)
	}
	rg, err := o.ripgrep()
	if err != nil {
		return "", err
	}
	files := []string{o.busybox(), rg}
	if o.Agent != "" {
		files = append(files, o.Agent)
	}
	for _, f := range files {
		real, err := filepath.EvalSymlinks(f)
		if err != nil {
			return "", fmt.Errorf("rootfs: %w", err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return "", fmt.Errorf("rootfs: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00", f, real, fi.Size(), fi.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// unpack writes the archive (this package's own, so trusted; still written through an os.Root)
// into the new directory dst, then makes its directories read-only.
func unpack(archive []byte, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	var dirs []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(h.Name, "/")
		mode := fs.FileMode(h.Mode).Perm()
		if h.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
			dirs = append(dirs, name)
		case tar.TypeReg:
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if err = errors.Join(err, f.Close()); err != nil {
				return err
			}
			if err := root.Chmod(name, mode); err != nil { // past the umask
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %s: unexpected type %c", h.Name, h.Typeflag)
		}
	}
	// Deepest first. /tmp keeps its mode (1777): sandboxes mount a tmpfs over it, and runc gives
	// a tmpfs the mode of the directory it covers.
	slices.Sort(dirs)
	slices.Reverse(dirs)
	for _, d := range append(dirs, ".") {
		if d == "tmp" {
			continue
		}
		if err := root.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

// removeTree removes a tree whose directories may be read-only.
func removeTree(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// Remove deletes a tree made by Materialize (for tests and clean-ups); nothing may use it.
func Remove(t Tree) error { return removeTree(t.Dir) }

func writeAtomic(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp := name + ".tmp-" + randomHex()
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
