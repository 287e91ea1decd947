package egress

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/errs"
)

// Secret is a credential the sandbox's requests carry without the sandbox ever holding it: the
// proxy, outside the sandbox, writes it into requests to the hosts an Injection binds it to.
// Inside, commands see only Placeholder(Name).
type Secret struct {
	Name  string
	Value string
}

// String never shows the value.
func (s Secret) String() string { return s.Name + "=<secret>" }

// GoString never shows the value either (%#v).
func (s Secret) GoString() string {
	return "egress.Secret{Name: " + fmt.Sprintf("%q", s.Name) + ", Value: <secret>}"
}

// Injection binds secrets to hosts: on every HTTPS request to a host Host matches (a pattern of
// the allowlist), the proxy sets Header to Template with each {{NAME}} replaced by that secret's
// value, replacing what the client sent. Parsed from "HOST:HEADER=TEMPLATE"
// ("api.example.com:Authorization=Bearer {{API_KEY}}"). Without a header ("HOST:{{NAME}}",
// Header ""), it only binds: the proxy replaces the secrets' placeholders where the client put
// them (a URL's password: git's https://x:PLACEHOLDER@host/) and sets no header.
type Injection struct {
	Host     string
	Header   string
	Template string
}

func (in Injection) String() string {
	if in.Header == "" {
		return in.Host + ":" + in.Template
	}
	return in.Host + ":" + in.Header + "=" + in.Template
}

// PlaceholderPrefix starts every placeholder.
const PlaceholderPrefix = "sandboxer-secret-"

// Placeholder is what a command in the sandbox holds instead of the secret name: a value to put
// where a client needs one (a token variable, the password of a URL). The proxy replaces it by
// the secret in the headers of requests to the hosts the secret is bound to (in a Basic
// credential too), and nowhere else: sent to any other host, it stays a placeholder.
func Placeholder(name string) string { return PlaceholderPrefix + name }

var (
	secretName  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)
	headerToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
	templateRef = regexp.MustCompile(`\{\{([^{}]*)\}\}`)
)

// ParseInjection reads "HOST:HEADER=TEMPLATE".
func ParseInjection(s string) (Injection, error) {
	host, rest, ok1 := strings.Cut(s, ":")
	if t := strings.TrimSpace(rest); ok1 && strings.HasPrefix(t, "{{") && templateRef.ReplaceAllString(t, "") == "" {
		return Injection{Host: strings.TrimSpace(host), Template: t}, nil // a binding only
	}
	header, template, ok2 := strings.Cut(rest, "=")
	if !ok1 || !ok2 {
		return Injection{}, badInjection(s, "want HOST:HEADER=TEMPLATE, as in 'api.example.com:Authorization=Bearer {{API_KEY}}', or HOST:{{NAME}} to bind a secret without a header")
	}
	return Injection{Host: strings.TrimSpace(host), Header: strings.TrimSpace(header), Template: template}, nil
}

func badInjection(s, why string) error {
	e := errs.New(errs.InvalidInput, "inject", "", "inject %q: %s", s, why)
	e.Details = map[string]any{"field": "inject"}
	return e
}

func badSecret(name, why string) error {
	e := errs.New(errs.InvalidInput, "secret", "", "secret %q: %s", name, why)
	e.Details = map[string]any{"field": "secret", "name": name}
	return e
}

// forbiddenHeaders are set by the proxy or the transport themselves.
var forbiddenHeaders = []string{"Host", "Connection", "Content-Length", "Transfer-Encoding", "Upgrade",
	"Te", "Trailer", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate"}

// secrets is a validated set of secrets and their bindings.
type secrets struct {
	values map[string]string // name -> value
	inject []Injection       // validated, Host normalised, Header canonical
}

// parseSecrets validates secrets and injections against the allowlist: names of [A-Z_][A-Z0-9_]*,
// values without line breaks or NUL (they go into headers), each secret bound to at least one
// host, each injection's host a pattern the allowlist allows and its template naming only known
// secrets. An error never holds a value.
func parseSecrets(list []Secret, inject []Injection, allow *Allowlist) (*secrets, error) {
	s := &secrets{values: map[string]string{}}
	for _, sec := range list {
		switch {
		case !secretName.MatchString(sec.Name):
			return nil, badSecret(sec.Name, "a name is upper-case letters, digits and _ (API_KEY)")
		case sec.Value == "":
			return nil, badSecret(sec.Name, "the value is empty")
		case strings.ContainsAny(sec.Value, "\r\n\x00"):
			return nil, badSecret(sec.Name, "the value holds a line break or NUL, which no header can carry")
		}
		if _, dup := s.values[sec.Name]; dup {
			return nil, badSecret(sec.Name, "given twice")
		}
		s.values[sec.Name] = sec.Value
	}
	used := map[string]bool{}
	for _, in := range inject {
		host, err := normalisePattern(in.Host)
		if err != nil {
			return nil, badInjection(in.String(), err.Error())
		}
		if !slices.Contains(allow.hostPatterns(), host) && (strings.HasPrefix(host, "*.") || !allow.Allows(host)) {
			return nil, badInjection(in.String(), fmt.Sprintf("host %s is not in allow-hosts: a secret is only sent where the allowlist lets requests go", host))
		}
		if in.Header != "" && !headerToken.MatchString(in.Header) || slices.ContainsFunc(forbiddenHeaders, func(h string) bool { return strings.EqualFold(h, in.Header) }) {
			return nil, badInjection(in.String(), fmt.Sprintf("header %q cannot be set by an injection", in.Header))
		}
		if strings.ContainsAny(in.Template, "\r\n\x00") {
			return nil, badInjection(in.String(), "the template holds a line break or NUL")
		}
		refs := templateRef.FindAllStringSubmatch(in.Template, -1)
		if len(refs) == 0 {
			return nil, badInjection(in.String(), "the template names no secret ({{NAME}})")
		}
		for _, m := range refs {
			if _, ok := s.values[m[1]]; !ok {
				return nil, badInjection(in.String(), fmt.Sprintf("{{%s}} is not a secret given with --secret", m[1]))
			}
			used[m[1]] = true
		}
		header := in.Header
		if header != "" {
			header = http.CanonicalHeaderKey(header)
		}
		s.inject = append(s.inject, Injection{Host: host, Header: header, Template: in.Template})
	}
	for name := range s.values {
		if !used[name] {
			return nil, badSecret(name, "bound to no host: add --inject 'HOST:HEADER=... {{"+name+"}}'")
		}
	}
	return s, nil
}

// binds reports whether host (normalised) gets secrets.
func (s *secrets) binds(host string) bool {
	return s != nil && slices.ContainsFunc(s.inject, func(in Injection) bool { return patternMatches(in.Host, host) })
}

// apply writes the secrets bound to host into h: each injection's header set from its template,
// and the placeholders of those secrets replaced in every other header (in a Basic credential
// too). Placeholders of secrets not bound to host stay as they are.
func (s *secrets) apply(host string, h http.Header) {
	if s == nil {
		return
	}
	bound := map[string]string{}
	var set []Injection
	for _, in := range s.inject {
		if !patternMatches(in.Host, host) {
			continue
		}
		set = append(set, in)
		for _, m := range templateRef.FindAllStringSubmatch(in.Template, -1) {
			bound[m[1]] = s.values[m[1]]
		}
	}
	if len(bound) == 0 {
		return
	}
	pairs := make([]string, 0, 2*len(bound))
	for name, v := range bound {
		pairs = append(pairs, Placeholder(name), v)
	}
	r := strings.NewReplacer(pairs...)
	for _, vs := range h {
		for i, v := range vs {
			if user, ok := basicPlaceholder(v); ok {
				v = "Basic " + base64.StdEncoding.EncodeToString([]byte(r.Replace(user)))
			}
			vs[i] = r.Replace(v)
		}
	}
	for _, in := range set {
		if in.Header == "" {
			continue // a binding only
		}
		h.Set(in.Header, templateRef.ReplaceAllStringFunc(in.Template, func(m string) string {
			return s.values[m[2:len(m)-2]]
		}))
	}
}

// basicPlaceholder decodes a Basic credential that holds a placeholder (git's
// https://user:PLACEHOLDER@host/).
func basicPlaceholder(v string) (string, bool) {
	enc, ok := strings.CutPrefix(v, "Basic ")
	if !ok {
		return "", false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil || !strings.Contains(string(dec), PlaceholderPrefix) {
		return "", false
	}
	return string(dec), true
}

// redact replaces every secret value in text by its placeholder: for anything the proxy reports
// or logs.
func (s *secrets) redact(text string) string {
	if s == nil {
		return text
	}
	for name, v := range s.values {
		text = strings.ReplaceAll(text, v, Placeholder(name))
	}
	return text
}
