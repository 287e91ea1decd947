// Package trustfile keeps the certificate bundle a sandbox's commands trust when the egress
// proxy terminates their TLS (issue 37): the sandbox's own trusted certificates followed by the
// proxy's authority, in a file under the sandbox's HOME. It uses the standard library only: the
// sandbox agent links it to write the bundle inside a container.
package trustfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
)

// Path is where, under a sandbox's HOME, adapters keep the bundle: a name no tool uses.
const Path = ".sandboxer/ca-bundle.pem"

// systemBundles are where distributions keep their bundle of trusted certificates.
var systemBundles = []string{
	"etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine, Arch
	"etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"etc/ssl/ca-bundle.pem",             // openSUSE
	"etc/ssl/cert.pem",                  // Alpine's link, macOS
}

// System returns the bundle of trusted certificates of the root file system at root ("/"
// for the host's), or nil when it has none of the usual files.
func System(root string) []byte {
	for _, p := range systemBundles {
		if b, err := os.ReadFile(filepath.Join(root, p)); err == nil && len(b) > 0 {
			return b
		}
	}
	return nil
}

// Write makes the file at path hold the bundle system returns followed by pem (the
// directory made 0755, the file 0644, replaced atomically). A file that ends with pem already is
// left as it is, after one small read and without calling system: the check every command makes
// (a recycled sandbox's HOME is emptied, and a command may remove the file) costs next to nothing.
func Write(path string, pem []byte, system func() ([]byte, error)) error {
	if endsWith(path, pem) {
		return nil
	}
	sys, err := system()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".ca-bundle-*")
	if err != nil {
		return err
	}
	_, err = f.Write(slices.Concat(sys, []byte("\n"), pem))
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// endsWith reports whether the file at path ends with tail.
func endsWith(path string, tail []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < int64(len(tail)) {
		return false
	}
	buf := make([]byte, len(tail))
	_, err = f.ReadAt(buf, fi.Size()-int64(len(tail)))
	return err == nil && bytes.Equal(buf, tail)
}
