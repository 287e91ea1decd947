package egress

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxer/sandboxer/errs"
)

// SecretRef names a secret and where its value is read on the host: "env:VAR" (a variable of the
// environment of the process that opens the sandbox) or "file:PATH" (an absolute path; one
// trailing line break is dropped). It is what settings and a sandbox's record keep: never the
// value, which is read by Resolve when a proxy is made or changed.
type SecretRef struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

func (r SecretRef) String() string { return r.Name + "=" + r.Source }

// MaxSecretFileBytes bounds a secret read from a file.
const MaxSecretFileBytes = 64 << 10

// ParseSecretRef reads "NAME=env:VAR" or "NAME=file:PATH" (PATH absolute: a caller makes a
// relative one absolute first). Errors: errs.InvalidInput naming the form.
func ParseSecretRef(s string) (SecretRef, error) {
	name, source, ok := strings.Cut(s, "=")
	r := SecretRef{Name: strings.TrimSpace(name), Source: strings.TrimSpace(source)}
	if !ok {
		return SecretRef{}, badSecret(r.Name, "want NAME=env:VAR or NAME=file:PATH")
	}
	return r, r.validate()
}

func (r SecretRef) validate() error {
	if !secretName.MatchString(r.Name) {
		return badSecret(r.Name, "a name is upper-case letters, digits and _ (API_KEY)")
	}
	kind, arg, _ := strings.Cut(r.Source, ":")
	switch {
	case kind == "env" && arg != "" && !strings.ContainsAny(arg, "=\x00"):
	case kind == "file" && filepath.IsAbs(arg):
	case kind == "file":
		return badSecret(r.Name, "the source "+r.Source+" is not an absolute path")
	default: // never shown: it may be a value given by mistake
		return badSecret(r.Name, "the source is neither env:VAR nor file:/absolute/path (a value is never given on the command line or in a file of settings)")
	}
	return nil
}

// Resolve reads the secret's value: from lookupEnv (nil: os.LookupEnv) for env:, from the file
// for file:. Errors (errs.InvalidInput) name the secret and its source, never a value: an unset
// or empty variable, a missing, unreadable, empty or too large file.
func (r SecretRef) Resolve(lookupEnv func(string) (string, bool)) (Secret, error) {
	if err := r.validate(); err != nil {
		return Secret{}, err
	}
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	kind, arg, _ := strings.Cut(r.Source, ":")
	var v string
	if kind == "env" {
		var ok bool
		if v, ok = lookupEnv(arg); !ok || v == "" {
			return Secret{}, badSecret(r.Name, "the environment variable "+arg+" is not set or empty in this process")
		}
	} else {
		b, err := readSecretFile(arg)
		if err != nil {
			return Secret{}, badSecret(r.Name, err.Error())
		}
		v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	return Secret{Name: r.Name, Value: v}, nil
}

func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("no file " + path)
		}
		return nil, errors.New("cannot read: " + err.Error())
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New(path + " is not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes+1))
	switch {
	case err != nil:
		return nil, errors.New("cannot read " + path)
	case len(b) > MaxSecretFileBytes:
		return nil, errors.New(path + " is larger than 64 KiB")
	}
	return b, nil
}

// ResolveSecrets resolves each of refs (Resolve), failing on the first that cannot be read.
func ResolveSecrets(refs []SecretRef, lookupEnv func(string) (string, bool)) ([]Secret, error) {
	out := make([]Secret, 0, len(refs))
	for _, r := range refs {
		s, err := r.Resolve(lookupEnv)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseInjections reads each of list (ParseInjection).
func ParseInjections(list []string) ([]Injection, error) {
	var out []Injection
	for _, s := range list {
		in, err := ParseInjection(s)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// CheckPolicy validates a policy as New and SetPolicy do (the allowlist, the secrets, their
// bindings), without making a proxy: for settings checked before a sandbox is opened.
func CheckPolicy(allowHosts []string, list []Secret, inject []Injection) error {
	if len(allowHosts) == 0 && len(list)+len(inject) == 0 {
		return nil
	}
	if len(allowHosts) == 0 {
		return errs.New(errs.InvalidInput, "secret", "", "secrets and injections need allow-hosts: a secret is only sent to a host the allowlist lets requests go to")
	}
	_, err := newPolicy(allowHosts, list, inject)
	return err
}
