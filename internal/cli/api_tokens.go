package cli

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"
)

// A tokens file holds the API's bearer tokens as SHA-256 hashes (never the tokens), each with a
// name, the adapters it may use and its quotas:
//
//	{"tokens":[{"name":"ci","sha256":"<hex>","adapters":["local","docker"],
//	            "maxSandboxes":10,"maxMemoryBytes":17179869184,"maxTTLSeconds":3600}]}
//
// A zero quota is none; no adapters is every adapter. `sandboxerd serve token add` writes entries.
// The server reads the file again when it changes (checked at most once a second), so tokens are
// added and revoked without a restart.

// token is one entry of the file. The zero token (no name, no quotas) is the caller of a server
// without tokens.
type token struct {
	Name           string   `json:"name"`
	SHA256         string   `json:"sha256"`
	Adapters       []string `json:"adapters,omitempty"`
	MaxSandboxes   int      `json:"maxSandboxes,omitempty"`
	MaxMemoryBytes int64    `json:"maxMemoryBytes,omitempty"`
	MaxTTLSeconds  int64    `json:"maxTTLSeconds,omitempty"`
}

// mayUse reports whether the token may make sandboxes of the adapter.
func (t *token) mayUse(adapter string) bool {
	return len(t.Adapters) == 0 || slices.Contains(t.Adapters, adapter)
}

type tokensDoc struct {
	Tokens []token `json:"tokens"`
}

// tokenNamePattern: names go into the journal's run ids and into logs.
var tokenNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// tokenFile is a tokens file, read again when it changes.
type tokenFile struct {
	path string
	log  *log.Logger

	mu      sync.Mutex
	checked time.Time
	stamp   string            // size and modification time of what byHash holds
	byHash  map[string]*token // hex SHA-256 -> entry
}

// openTokens reads the tokens file; an unreadable or invalid one is an error (the server does
// not start without its tokens).
func openTokens(path string, lg *log.Logger) (*tokenFile, error) {
	f := &tokenFile{path: path, log: lg}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

func parseTokens(data []byte) (map[string]*token, error) {
	var doc tokensDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	m := map[string]*token{}
	names := map[string]bool{}
	for i := range doc.Tokens {
		t := &doc.Tokens[i]
		if !tokenNamePattern.MatchString(t.Name) {
			return nil, fmt.Errorf("token %d: name %q: want letters, digits, '.', '_' or '-' (1 to 64)", i+1, t.Name)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("token %q: the name is used twice", t.Name)
		}
		names[t.Name] = true
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("token %q: sha256 must be 64 hex digits", t.Name)
		}
		for _, a := range t.Adapters {
			if !knownAdapter(a) {
				return nil, fmt.Errorf("token %q: %w", t.Name, unknownAdapter(a))
			}
		}
		if t.MaxSandboxes < 0 || t.MaxMemoryBytes < 0 || t.MaxTTLSeconds < 0 {
			return nil, fmt.Errorf("token %q: quotas must not be negative", t.Name)
		}
		m[t.SHA256] = t
	}
	return m, nil
}

// reload reads the file when its size or modification time changed.
func (f *tokenFile) reload() error {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("tokens: %s is readable or writable by others (mode %v): chmod 600 it", f.path, fi.Mode().Perm())
	}
	stamp := fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	if stamp == f.stamp {
		return nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	m, err := parseTokens(data)
	if err != nil {
		return fmt.Errorf("tokens: %s: %w", f.path, err)
	}
	f.byHash, f.stamp = m, stamp
	return nil
}

// lookup finds the entry of a presented token, or nil.
func (f *tokenFile) lookup(secret string) *token {
	sum := sha256.Sum256([]byte(secret))
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Sub(f.checked) >= time.Second {
		f.checked = now
		if err := f.reload(); err != nil && f.log != nil {
			f.log.Printf("%v (the tokens read before stay in force)", err)
		}
	}
	return f.byHash[hex.EncodeToString(sum[:])]
}

// addToken makes a new token, appends its hash to the file (created 0600 when missing, replaced
// atomically) and returns the token, which is stored nowhere.
func addToken(path string, t token) (string, error) {
	if !tokenNamePattern.MatchString(t.Name) {
		return "", fmt.Errorf("token name %q: want letters, digits, '.', '_' or '-' (1 to 64)", t.Name)
	}
	var doc tokensDoc
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &doc); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
	case !os.IsNotExist(err):
		return "", err
	}
	for _, e := range doc.Tokens {
		if e.Name == t.Name {
			return "", fmt.Errorf("%s already has a token named %q (remove its entry to replace it)", path, t.Name)
		}
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := "sbx_" + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(secret))
	t.SHA256 = hex.EncodeToString(sum[:])
	doc.Tokens = append(doc.Tokens, t)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	if _, err := parseTokens(out); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tokens-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return "", err
	}
	return secret, os.Rename(tmp.Name(), path)
}
