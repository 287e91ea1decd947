package filesync

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sandboxer/sandboxer/errs"
)

// Kinds of entries (git's model: a file, executable or not, or a symbolic link).
const (
	KindFile    = "file"
	KindSymlink = "symlink"
)

// MaxLinkTarget bounds a symbolic link's target text (Linux's PATH_MAX).
const MaxLinkTarget = 4096

// Entry is the metadata of one stored file. Content is read separately (Store.Read, Store.Scan).
type Entry struct {
	Collection string `json:"collection"`
	Path       string `json:"path"` // slash-separated, relative to the workspace root
	// Kind is KindFile or KindSymlink; a symlink's content is its target text.
	Kind      string    `json:"kind"`
	Exec      bool      `json:"exec,omitempty"` // a file with the executable bit (0755; else 0644)
	Hash      string    `json:"hash"`           // lower-case hex SHA-256 of the content; "" when the entry has no content
	Size      int64     `json:"size"`           // content bytes
	UpdatedAt time.Time `json:"updatedAt"`      // set by the store when the entry was last written
}

// HasContent reports whether the entry holds content. An entry without content is metadata only:
// Hydrate skips it and Flush never deletes it.
func (e Entry) HasContent() bool { return e.Hash != "" }

// Version is what compare-and-swap compares for this entry (see Version).
func (e Entry) Version() string { return Version(e.Kind, e.Exec, e.Hash) }

// Version names one state of an entry: its content hash for a plain file, the hash and "+x" for
// an executable file, the hash and "+l" for a symbolic link (the hash of its target text), "" for
// an entry without content. Change.Base and the hashes of a Conflict are versions, so that a
// change of the executable bit alone, or a file replaced by a link to the same text, is a change.
// A plain file's version is its hash: state saved before kinds existed stays valid.
func Version(kind string, exec bool, hash string) string {
	switch {
	case hash == "":
		return ""
	case kind == KindSymlink:
		return hash + "+l"
	case exec:
		return hash + "+x"
	}
	return hash
}

// SplitVersion is the inverse of Version.
func SplitVersion(v string) (kind string, exec bool, hash string) {
	switch {
	case strings.HasSuffix(v, "+l"):
		return KindSymlink, false, v[:len(v)-2]
	case strings.HasSuffix(v, "+x"):
		return KindFile, true, v[:len(v)-2]
	}
	return KindFile, false, v
}

// Base values for Change.Base besides a hash.
const (
	// Any applies the change whatever the store holds.
	Any = ""
	// Absent applies the change only when the collection holds no entry at the path, or an entry
	// without content.
	Absent = "absent"
)

// Change is one conditional write of a Store.Apply batch.
type Change struct {
	Collection string
	Path       string
	// Delete removes the entry; otherwise the entry is created or replaced with Content.
	Delete bool
	// Content is the new content (binary-safe; nil and empty are both the empty file) unless
	// NoContent or Delete is set.
	Content []byte
	// NoContent records a metadata-only entry (Hash "").
	NoContent bool
	// Kind is KindFile ("" means KindFile) or KindSymlink (Content is then the link's target
	// text: 1 to MaxLinkTarget bytes, no NUL). Exec sets the executable bit of a file.
	Kind string
	Exec bool
	// KeepContent says Content is not sent: the store keeps the content it holds, which must
	// have Hash (else the change is a conflict), and applies Kind and Exec (a mode change alone,
	// no re-upload).
	KeepContent bool
	// Hash is the SHA-256 hex of Content when the caller already has it; the store computes it
	// when empty.
	Hash string
	// Base is what the store must hold for the change to apply: a version (see Version), Absent,
	// or Any. A put whose version equals what the store holds, and a delete of an entry that is
	// already gone, always succeed without writing.
	Base string
}

// Version is the version the change puts ("" for a delete or an entry without content).
func (c Change) Version() string {
	if c.Delete || c.NoContent {
		return ""
	}
	return Version(c.Kind, c.Exec, c.Hash)
}

// Conflict is a change that was not applied because the store did not hold its base.
type Conflict struct {
	Collection string `json:"collection"`
	Path       string `json:"path"`
	// Kind is "modify" (both sides changed the content), "add" (both sides created the path) or
	// "delete" (one side deleted, the other changed the content).
	Kind string `json:"kind"`
	// Base is the version (see Version: the hash, with "+x" for an executable file and "+l" for
	// a symbolic link) both sides started from ("" when the path did not exist).
	Base string `json:"base"`
	// Ours is the sandbox's version ("" when the sandbox deleted the file).
	Ours string `json:"ours"`
	// Theirs is the store's version now ("" when the store no longer has the entry).
	Theirs string `json:"theirs"`
}

// Store keeps named collections of files: the source of truth that Sync hydrates a workspace from
// and flushes it back to. Implementations: sync/dirstore (plain files and a manifest) and
// sync/sqlitestore (SQLite, the embedded default). The conformance suite is filesynctest.RunStore.
//
// Collection names match [A-Za-z0-9_-][A-Za-z0-9._-]* (at most 128 bytes); a bad one is
// errs.InvalidInput. Paths are clean, slash-separated and relative (see CheckPath); a bad one is
// errs.PathInvalid or errs.PathEscape. A collection exists once it holds an entry. Every method
// can also fail with errs.Internal (I/O, database) or a context error, and with
// errs.SandboxUnavailable after Close.
type Store interface {
	// List returns the metadata of every entry of collection, sorted by path. A collection that
	// holds nothing gives an empty list, not an error.
	List(ctx context.Context, collection string) ([]Entry, error)

	// Get returns one entry's metadata; errs.NotFound when the collection has no entry there.
	Get(ctx context.Context, collection, path string) (Entry, error)

	// Read returns one entry's content; errs.NotFound when there is no entry or it has no content.
	Read(ctx context.Context, collection, path string) ([]byte, error)

	// Scan calls fn for every entry of collection, sorted by path, with its content (nil for an
	// entry without content). content is only valid during the call, and fn must not call the
	// same store. An error from fn stops the scan and is returned.
	Scan(ctx context.Context, collection string, fn func(e Entry, content []byte) error) error

	// Apply applies changes whose Base matches what the store holds and returns the others as
	// conflicts (Kind left empty; Theirs is the store's hash). Two changes to the same collection
	// and path in one batch are errs.InvalidInput, and so is a put that would make a file the
	// parent directory of another entry of its collection. Writes are crash-safe: a process killed
	// at any point during Apply leaves every entry at its old or its new state, never torn, and
	// the store usable. Apply is safe for concurrent use, also from several processes.
	Apply(ctx context.Context, changes []Change) ([]Conflict, error)

	// Collections returns the names of the collections that hold at least one entry, sorted.
	Collections(ctx context.Context) ([]string, error)

	// Close releases the store. It is idempotent.
	Close() error
}

// Hash returns the lower-case hex SHA-256 of data.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// CheckCollection validates a collection name.
func CheckCollection(op, name string) error {
	if name == "" || len(name) > 128 || name[0] == '.' {
		return errs.New(errs.InvalidInput, op, name, "collection name must be 1-128 characters of [A-Za-z0-9._-], not starting with a dot")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return errs.New(errs.InvalidInput, op, name, "collection name must be 1-128 characters of [A-Za-z0-9._-], not starting with a dot")
		}
	}
	return nil
}

// CheckPath validates an entry path: non-empty, relative, slash-separated, already clean (no ".",
// "..", empty or trailing components), no NUL byte. "" and "." are errs.PathInvalid; absolute
// paths and paths whose cleaned form leaves the root are errs.PathEscape.
func CheckPath(op, p string) error {
	if p == "" || p == "." {
		return errs.New(errs.PathInvalid, op, p, "entry path is empty")
	}
	if p[0] == '/' {
		return errs.New(errs.PathEscape, op, p, "entry path is absolute")
	}
	// One pass over the components: this runs for every file of every flush.
	for i := 0; i <= len(p); {
		j := strings.IndexByte(p[i:], '/')
		if j < 0 {
			j = len(p) - i
		}
		c := p[i : i+j]
		switch {
		case c == "" || c == "." || c == "..":
			if cp := path.Clean(p); cp == ".." || strings.HasPrefix(cp, "../") {
				return errs.New(errs.PathEscape, op, p, "entry path leaves the workspace")
			}
			return errs.New(errs.PathInvalid, op, p, "entry path is not clean (no '.', '..' or empty components, no trailing slash)")
		case strings.IndexByte(c, 0) >= 0:
			return errs.New(errs.PathInvalid, op, p, "entry path contains a NUL byte")
		}
		i += j + 1
	}
	return nil
}

// EncodePath returns p as a string that encoding/json keeps exactly (JSON turns every byte that is
// not UTF-8 into U+FFFD, so two such names would become one): p itself when it is valid UTF-8,
// else a NUL byte followed by the standard base64 of p's bytes. A path never holds NUL, so the
// two forms never meet. Whatever keeps paths in JSON (dirstore's manifests and journal, the
// state file) writes them this way.
func EncodePath(p string) string {
	if utf8.ValidString(p) {
		return p
	}
	return "\x00" + base64.StdEncoding.EncodeToString([]byte(p))
}

// DecodePath is the inverse of EncodePath, and checks the path as CheckPath does. An encoded form
// EncodePath does not write (bad base64, or bytes that are valid UTF-8: two spellings of one
// name) is errs.PathInvalid.
func DecodePath(op, s string) (string, error) {
	if strings.HasPrefix(s, "\x00") {
		b, err := base64.StdEncoding.Strict().DecodeString(s[1:])
		if err != nil || utf8.Valid(b) {
			return "", errs.New(errs.PathInvalid, op, s, "not a path encoded by EncodePath")
		}
		s = string(b)
	}
	return s, CheckPath(op, s)
}

// CheckChanges validates a batch for Store.Apply (names, paths, bases, no two changes to one
// entry) and fills in missing hashes. A Hash given by the caller is trusted, not recomputed.
func CheckChanges(op string, changes []Change) error {
	seen := make(map[[2]string]struct{}, len(changes))
	for i := range changes {
		c := &changes[i]
		if err := CheckCollection(op, c.Collection); err != nil {
			return err
		}
		if err := CheckPath(op, c.Path); err != nil {
			return err
		}
		k := [2]string{c.Collection, c.Path}
		if _, dup := seen[k]; dup {
			return errs.New(errs.InvalidInput, op, c.Path, "two changes to the same entry in one batch")
		}
		seen[k] = struct{}{}
		if c.Base != Any && c.Base != Absent && !isVersion(c.Base) {
			return errs.New(errs.InvalidInput, op, c.Path, "base must be a version (SHA-256 hex hash, optionally +x or +l), Absent or Any")
		}
		switch c.Kind {
		case "":
			c.Kind = KindFile
		case KindFile:
		case KindSymlink:
			if c.Exec {
				return errs.New(errs.InvalidInput, op, c.Path, "a symbolic link has no executable bit")
			}
			if !c.Delete && !c.NoContent {
				if err := CheckLinkText(op, c.Path, c.Content); err != nil {
					return err
				}
			}
		default:
			return errs.New(errs.InvalidInput, op, c.Path, "kind must be %q or %q, not %q", KindFile, KindSymlink, c.Kind)
		}
		if c.KeepContent && (c.Delete || c.NoContent || c.Kind != KindFile || !isHash(c.Hash)) {
			return errs.New(errs.InvalidInput, op, c.Path, "keepContent needs a file's content hash")
		}
		switch {
		case c.Delete || c.NoContent:
			c.Hash = ""
			c.Exec = false
		case c.Hash == "":
			c.Hash = Hash(c.Content)
		case !isHash(c.Hash):
			return errs.New(errs.InvalidInput, op, c.Path, "hash must be a lower-case SHA-256 hex string")
		}
	}
	return nil
}

// CheckLinkText validates a symbolic link's target text as a store keeps it: 1 to MaxLinkTarget
// bytes without NUL (errs.InvalidInput). Where it leads is Sync's business (see LinkInside).
func CheckLinkText(op, p string, target []byte) error {
	if len(target) == 0 || len(target) > MaxLinkTarget || bytes.IndexByte(target, 0) >= 0 {
		return errs.New(errs.InvalidInput, op, p, "a symbolic link's target must be 1-%d bytes without NUL", MaxLinkTarget)
	}
	return nil
}

// Holds reports whether an entry state (exists, version) satisfies base.
func Holds(base string, exists bool, version string) bool {
	switch base {
	case Any:
		return true
	case Absent:
		return !exists || version == ""
	}
	return exists && version == base
}

// Settled reports whether change c needs no write given what the store holds (exists, its
// version): the same kind, mode and content are already there, or the entry is already gone.
func Settled(c Change, exists bool, version string) bool {
	switch {
	case c.Delete:
		return !exists
	case c.NoContent:
		return exists && version == ""
	}
	return exists && version == c.Version()
}

// KeepsContent reports whether a KeepContent change c can apply to what the store holds (its
// version): the store holds content with c's hash. Otherwise the change is a conflict.
func KeepsContent(c Change, version string) bool {
	_, _, h := SplitVersion(version)
	return version != "" && h == c.Hash
}

func isVersion(s string) bool {
	_, _, h := SplitVersion(s)
	return isHash(h)
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
