package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// PreviewBytes is the most a truncated field keeps of the original JSON text.
const PreviewBytes = 1024

// truncated is the stored form of a JSON field over the limit.
type truncated struct {
	Truncated bool   `json:"truncated"`
	Bytes     int    `json:"bytes"`
	Preview   string `json:"preview"`
}

// Truncate returns s unchanged when it is at most limit bytes (limit <= 0: no limit), and otherwise
// {"truncated":true,"bytes":len(s),"preview":"<head of s>"} where the preview is the first
// min(PreviewBytes, limit/2) bytes of s cut back to a UTF-8 boundary.
func Truncate(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	n := min(PreviewBytes, limit/2, len(s))
	// Back up to the start of a rune so the preview is valid UTF-8 (when s is).
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(truncated{Truncated: true, Bytes: len(s), Preview: s[:n]})
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// Digest is what the journal keeps of a large or sensitive string input (write content, edit
// patch): its SHA-256 and its size in bytes.
type Digest struct {
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// DigestOf returns the Digest of s.
func DigestOf(s string) Digest {
	sum := sha256.Sum256([]byte(s))
	return Digest{SHA256: hex.EncodeToString(sum[:]), Bytes: len(s)}
}

// RedactFields returns inputJSON with each named top-level string field replaced by its Digest:
// {"path":"a","content":"secret"} with "content" becomes
// {"path":"a","content":{"sha256":"…","bytes":6}}. Other fields are kept as given. Input that is
// not a JSON object is replaced by the Digest of the whole text, so nothing unredacted is kept by
// mistake.
func RedactFields(inputJSON []byte, fields ...string) []byte {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(inputJSON))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		b, _ := json.Marshal(map[string]Digest{"input": DigestOf(string(inputJSON))})
		return b
	}
	for _, f := range fields {
		raw, ok := obj[f]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			s = string(raw) // not a string: digest its JSON text instead of keeping it
		}
		obj[f], _ = json.Marshal(DigestOf(s))
	}
	b, _ := json.Marshal(obj)
	return b
}
