// Package oneshot is the wire between the sandboxer front (cmd/sandboxer: a small binary that
// starts in about the time of a Go hello world) and the resident server it hands one-shot calls
// to (sandboxerd server): where the server's socket is, which server serves an environment, and
// the one request and one reply of a call. It uses the standard library only, and only the
// parts that cost nothing at start: the front links it.
//
// A call: the front connects to the server's unix socket and sends one request (its working
// directory, arguments and SANDBOXER_* environment); the server answers Accepted; the front then
// sends its standard input, output and error, attached as SCM_RIGHTS to one byte (Stdio); the
// server runs the command line on those descriptors and answers with the exit status. The
// descriptors go only to a server that has accepted the call: a server that does not (stuck, or
// out of descriptors) holds nothing of the caller's, so an interrupted front leaves its caller
// nothing to wait for. The front closing the connection, or its writing end, cancels the call
// (an interrupted front).
package oneshot

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Served are the commands the front hands to the server; the others (mcp, doctor, image,
// port-forward: long sessions, or probes of this process's own environment) run in a process of
// their own. An empty command line, help and --help are served too.
var Served = []string{"", "tool", "exec", "log", "ps", "logs", "kill", "sandbox", "help", "--help", "-h"}

// IsServed reports whether the server runs this command line.
func IsServed(args []string) bool {
	first := ""
	if len(args) > 0 {
		first = args[0]
	}
	return slices.Contains(Served, first)
}

// Dir is the directory of the servers' sockets: $SANDBOXER_SERVER_DIR, else
// $XDG_RUNTIME_DIR/sandboxer, else sandboxer-UID in the system temporary directory. It must be
// a directory of this user that no one else can enter, on a path no one else can change
// (OpenServerDir).
func Dir(getenv func(string) string, uid int) string {
	if d := getenv("SANDBOXER_SERVER_DIR"); filepath.IsAbs(d) {
		return d
	}
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "sandboxer")
	}
	return filepath.Join(os.TempDir(), "sandboxer-"+strconv.Itoa(uid))
}

// engineVars and enginePrefixes are the variables the engine, or what it starts on the host,
// reads from its own environment: where its files are (HOME, XDG_*, TMPDIR), the programs it runs
// (PATH: ripgrep, the OCI runtimes, the Go toolchain that builds the agent, with GO* and CGO_*),
// the daemons and clusters it talks to (DOCKER_*, KUBECONFIG, KUBERNETES_*, the proxies, the
// certificates), ripgrep's configuration, the locale, the Go runtime's settings and
// OpenTelemetry's (OTEL_*: where spans go; the SDK reads them from the process's own
// environment, internal/telemetry). A command in a
// sandbox never sees the host's environment. Only these name a server (Name), and a server
// runs with only these (ServerEnv): any other variable, which callers often set per call (an id,
// a tool's randomized offset), neither starts another server nor reaches one.
var (
	engineVars = []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "LANG", "LANGUAGE",
		"KUBECONFIG", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy",
		"https_proxy", "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "RIPGREP_CONFIG_PATH"}
	enginePrefixes = []string{"XDG_", "LC_", "DOCKER_", "KUBERNETES_", "GO", "CGO_", "OTEL_"}
)

// PerCall says whether an environment entry travels with each call rather than naming the
// server: the SANDBOXER_* variables.
func PerCall(kv string) bool { return strings.HasPrefix(kv, "SANDBOXER_") }

// ServerEnv is the environment a server for environ runs with, sorted: the variables of environ
// the engine reads (see engineVars), without the per-call ones.
func ServerEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if PerCall(kv) {
			continue
		}
		if slices.Contains(engineVars, k) || slices.ContainsFunc(enginePrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	return env
}

// MaxServers bounds the servers of one user's directory: a front that finds this many running
// starts no other (its call runs in a process of its own), so callers whose environments keep
// changing never pile up idle servers.
const MaxServers = 8

// Name names the server of an engine binary (its path, size and modification time: a rebuilt
// engine gets a new server) for an environment (ServerEnv) and umask. Two calls share a server
// only when everything the server takes from its own process is theirs too.
func Name(engine string, fi os.FileInfo, serverEnv []string, umask int) string {
	h := fnv.New64a()
	for _, s := range []string{engine, strconv.FormatInt(fi.Size(), 10), strconv.FormatInt(fi.ModTime().UnixNano(), 10), strconv.Itoa(umask)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, kv := range serverEnv {
		h.Write([]byte(kv))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// Request is one call.
type Request struct {
	// Key is the server's key, read from NAME.key in the socket's directory: only a process
	// that can read that directory may use the server. A command in a sandbox of the same user
	// and namespaces (the local adapter without its namespaces, where only Landlock confines its
	// files) cannot, and so cannot have the server run a call outside its confinement.
	Key  string
	Dir  string   // the front's working directory
	Args []string // the command line, without the program name
	Env  []string // the front's environment, KEY=VALUE: its SANDBOXER_* variables are the call's settings; the others are read only for secrets' env: sources
}

// MaxRequest bounds a request (the tools' inputs are at most a few MiB).
const MaxRequest = 64 << 20

// Magic starts every request; a server of another protocol refuses it. (sbx1 sent the
// descriptors with the request.)
const Magic = "sbx2"

// Append appends the request's encoding: Magic, its length (4 bytes, big endian) and the
// strings, each with its length as a uvarint.
func (r Request) Append(b []byte) []byte {
	start := len(b)
	b = append(b, Magic...)
	b = append(b, 0, 0, 0, 0)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(r.Key)
	str(r.Dir)
	for _, list := range [][]string{r.Args, r.Env} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, s := range list {
			str(s)
		}
	}
	binary.BigEndian.PutUint32(b[start+len(Magic):], uint32(len(b)-start-HeaderLen))
	return b
}

// HeaderLen is the length of Magic and the length that follows it.
const HeaderLen = len(Magic) + 4

// BodyLen checks a request's header and returns the length of the body after it.
func BodyLen(header []byte) (int, error) {
	if len(header) < HeaderLen || string(header[:len(Magic)]) != Magic {
		return 0, errors.New("oneshot: not a request of this protocol")
	}
	n := binary.BigEndian.Uint32(header[len(Magic):])
	if n > MaxRequest {
		return 0, errors.New("oneshot: request too large")
	}
	return int(n), nil
}

// Parse decodes a request's body.
func Parse(body []byte) (Request, error) {
	var r Request
	bad := errors.New("oneshot: malformed request")
	num := func() (uint64, bool) {
		n, k := binary.Uvarint(body)
		if k <= 0 {
			return 0, false
		}
		body = body[k:]
		return n, true
	}
	str := func() (string, bool) {
		n, ok := num()
		if !ok || n > uint64(len(body)) {
			return "", false
		}
		s := string(body[:n])
		body = body[n:]
		return s, true
	}
	var ok bool
	if r.Key, ok = str(); !ok {
		return r, bad
	}
	if r.Dir, ok = str(); !ok || !filepath.IsAbs(r.Dir) {
		return r, bad
	}
	for _, list := range []*[]string{&r.Args, &r.Env} {
		n, ok := num()
		if !ok || n > uint64(len(body)) {
			return r, bad
		}
		for range n {
			s, ok := str()
			if !ok {
				return r, bad
			}
			*list = append(*list, s)
		}
	}
	if len(body) != 0 {
		return r, bad
	}
	return r, nil
}

// KeyName is the name of the file of a server's key in the server directory (see Request.Key).
func KeyName(name string) string { return name + ".key" }

// A reply is one byte of kind and 4 of value (big endian).
const (
	ReplyLen = 5
	// Accepted: the server read the request and runs it. Anything else, or nothing, means
	// nothing ran, and the front runs the call in a process of its own.
	Accepted = 'a'
	// Refused: the server does not run calls of this peer, or of this key (see the server's log).
	Refused = 'r'
	// Exit follows Accepted once the call ended; the value is its exit status.
	Exit = 'x'
)

// Stdio is the byte the front sends after Accepted, its stdin, stdout and stderr attached.
const Stdio = 's'

// Reply encodes a reply.
func Reply(kind byte, value uint32) []byte {
	b := []byte{kind, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], value)
	return b
}

// What a starting server writes on its ready descriptor (fd 3): Ready once it accepts calls,
// Busy when another server of its name runs or starts (the front dials that one).
const (
	Ready = "ready\n"
	Busy  = "busy\n"
)
