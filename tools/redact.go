package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Digest is what the journal keeps of a redacted string: its SHA-256 and its size in bytes.
type Digest struct {
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// DigestOf returns the Digest of s.
func DigestOf(s string) Digest {
	sum := sha256.Sum256([]byte(s))
	return Digest{SHA256: hex.EncodeToString(sum[:]), Bytes: len(s)}
}

// redact replaces each named top-level field of the input object by the Digest of its string value
// (of its JSON text when it is not a string). Anything that is not a JSON object becomes
// {"input":Digest} as a whole.
func redact(input json.RawMessage, fields []string) json.RawMessage {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(input))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		b, _ := json.Marshal(map[string]Digest{"input": DigestOf(string(input))})
		return b
	}
	for _, f := range fields {
		raw, ok := obj[f]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			s = string(raw)
		}
		obj[f], _ = json.Marshal(DigestOf(s))
	}
	b, _ := json.Marshal(obj)
	return b
}
