package journal

import (
	"bytes"
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
