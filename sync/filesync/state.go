package filesync

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/sandboxer/sandboxer/errs"
)

// stateFile is the JSON form of Options.StateFile.
type stateFile struct {
	Version int               `json:"version"`
	Known   map[string]known  `json:"known"` // path (EncodePath) -> collection and agreed hash
	Cache   map[string]cached `json:"cache"` // path (EncodePath) -> stat when hashed, and the hash
}

func (s *Sync) loadState() error {
	b, err := os.ReadFile(s.opts.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errs.Wrap(errs.Internal, "filesync.state", s.opts.StateFile, err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil || st.Version != 1 {
		if err == nil {
			err = errors.New("unsupported state version")
		}
		return errs.Wrap(errs.Internal, "filesync.state", s.opts.StateFile, err)
	}
	configured := map[string]bool{}
	for _, c := range s.opts.Collections {
		configured[c] = true
	}
	for e, k := range st.Known {
		if p, err := DecodePath("", e); err == nil && configured[k.Coll] && isVersion(k.Hash) {
			s.known[p] = k
		}
	}
	for e, c := range st.Cache {
		if p, err := DecodePath("", e); err == nil {
			s.cache[p] = c
		}
	}
	return nil
}

// encodeKeys returns m with its keys (paths) through EncodePath: m itself when every path is
// valid UTF-8, as nearly always.
func encodeKeys[V any](m map[string]V) map[string]V {
	for p := range m {
		if !utf8.ValidString(p) {
			out := make(map[string]V, len(m))
			for p, v := range m {
				out[EncodePath(p)] = v
			}
			return out
		}
	}
	return m
}

// saveState writes the state file atomically when it changed.
func (s *Sync) saveState() error {
	if s.opts.StateFile == "" || !s.dirty {
		return nil
	}
	b, err := json.Marshal(stateFile{Version: 1, Known: encodeKeys(s.known), Cache: encodeKeys(s.cache)})
	if err != nil {
		return errs.Wrap(errs.Internal, "filesync.state", s.opts.StateFile, err)
	}
	dir := filepath.Dir(s.opts.StateFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errs.Wrap(errs.Internal, "filesync.state", s.opts.StateFile, err)
	}
	f, err := os.CreateTemp(dir, ".filesync-state-*")
	if err != nil {
		return errs.Wrap(errs.Internal, "filesync.state", s.opts.StateFile, err)
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return errs.Wrap(errs.Internal, "filesync.state", s.opts.StateFile, err)
	}
	if err := os.Rename(f.Name(), s.opts.StateFile); err != nil {
		os.Remove(f.Name())
		return errs.Wrap(errs.Internal, "filesync.state", s.opts.StateFile, err)
	}
	s.dirty = false
	return nil
}
