package lifecycle

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sandboxer/sandboxer/errs"
)

// Record describes one long-lived sandbox: what Manager keeps in STATE/sandboxes/ID/sandbox.json
// to find it again from another process.
type Record struct {
	ID        string `json:"id"`
	Adapter   string `json:"adapter"`
	Workspace string `json:"workspace,omitempty"` // local: the workspace directory; oci: the container's on the host; kubernetes: in the pod
	Image     string `json:"image,omitempty"`     // docker, kubernetes, oci: the image it was created from
	Backend   string `json:"backend,omitempty"`   // the adapter's own id (docker: the container; remote: the server's)
	URL       string `json:"url,omitempty"`       // remote: the server (never its token)
	Namespace string `json:"namespace,omitempty"` // kubernetes: the namespace of its pod
	ForkOf    string `json:"forkOf,omitempty"`    // the id of the sandbox it was forked from
	// RestoredFrom is the checkpoint directory it was restored from (Manager.Restore).
	RestoredFrom string    `json:"restoredFrom,omitempty"`
	Network      *Network  `json:"network,omitempty"` // its egress policy (never a secret's value); nil: none
	CreatedAt    time.Time `json:"createdAt"`
}

// records is the records part of a state directory:
//
//	sandboxes/<id>/sandbox.json   the Record
//	sandboxes/<id>/workspace/     the workspace of a local sandbox
//
// Ids are generated here (NewID) and checked on every lookup (CheckID), so an id given on a
// command line can never name a path outside the directory.
type records struct{ root string }

// NewID returns a fresh sandbox id.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sbx-" + hex.EncodeToString(b[:])
}

// CheckID rejects ids that are not of the form this package generates (lower-case letters, digits
// and '-', at most 63): errs.InvalidInput.
func CheckID(id string) error {
	if !validID(id) {
		return errs.New(errs.InvalidInput, "sandbox", "", "invalid sandbox id %q", id)
	}
	return nil
}

// validID reports whether id matches ^[a-z0-9][a-z0-9-]{0,62}$. It is a loop, not a regexp: a
// compiled regexp with that repetition was the largest package-level allocation of this package
// (722 allocations, 51 KB, at every process start, issue 15).
func validID(id string) bool {
	if len(id) == 0 || len(id) > 63 || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// sandboxDir returns the directory of sandbox id.
func (d records) sandboxDir(id string) string { return filepath.Join(d.root, "sandboxes", id) }

// workspaceDir returns where a local sandbox id keeps its workspace.
func (d records) workspaceDir(id string) string { return filepath.Join(d.sandboxDir(id), "workspace") }

// save writes r atomically, creating its directory. Errors: an invalid id, or I/O.
func (d records) save(r Record) error {
	if err := CheckID(r.ID); err != nil {
		return err
	}
	dir := d.sandboxDir(r.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".sandbox-*.json")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, "sandbox.json"))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// get returns the record of id. Errors: errs.InvalidInput for a malformed id, errs.NotFound when
// there is no such sandbox, or I/O and decoding errors.
func (d records) get(id string) (Record, error) {
	if err := CheckID(id); err != nil {
		return Record{}, err
	}
	b, err := os.ReadFile(filepath.Join(d.sandboxDir(id), "sandbox.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, errs.New(errs.NotFound, "sandbox", "", "no sandbox %q in %s", id, d.root)
	}
	if err != nil {
		return Record{}, fmt.Errorf("state: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("state: sandbox %s: %w", id, err)
	}
	if r.ID != id {
		return Record{}, fmt.Errorf("state: sandbox %s: record names %q", id, r.ID)
	}
	return r, nil
}

// list returns every record, oldest first. A directory without a readable record is skipped.
func (d records) list() ([]Record, error) {
	ents, err := os.ReadDir(filepath.Join(d.root, "sandboxes"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	var out []Record
	for _, e := range ents {
		if !e.IsDir() || CheckID(e.Name()) != nil {
			continue
		}
		r, err := d.get(e.Name())
		if err != nil {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// delete removes the record of id and its directory (the local workspace with it). Errors as Get.
func (d records) delete(id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	dir := d.sandboxDir(id)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return errs.New(errs.NotFound, "sandbox", "", "no sandbox %q in %s", id, d.root)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}
