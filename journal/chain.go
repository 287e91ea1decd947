package journal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// The hash chain (issue 39, docs/journal.md): every finished row carries its place in its run's
// chain (chain_index, from 1), the hash of the row before it in that chain (prev_hash, "" for
// the first) and its own hash (row_hash), SHA-256 of its canonical encoding; with a key, also
// row_sig, HMAC-SHA256 of row_hash under the key, and sig_key_id, the key's id. A row is linked
// when it becomes final (Finish, Record), in the transaction that makes it final, which also
// moves its run's head (chain_heads: the last index and hash of the run), so that writers of
// one run in several processes form one chain in the order their rows were finished.

// hashedColumns are the columns a row hash covers, in the order of the canonical encoding.
var hashedColumns = []string{"id", "run_id", "node_id", "iteration", "attempt", "seq", "tool_name",
	"input_json", "output_json", "started_at_ms", "finished_at_ms", "status", "error_json",
	"idempotency_key", "side_effect", "idempotent", "chain_index", "prev_hash"}

// chainTag is the canonical encoding's first field: its version.
const chainTag = "sbxj1"

// CanonicalSQL is an SQLite query that prints the canonical encoding of each row (append
// "WHERE id = N"): the version tag, then every hashed column as its byte length in decimal, a
// colon, its bytes (integers in decimal) and a comma. Its SHA-256, in lower-case hex, is the
// row's row_hash. docs/journal.md quotes it.
var CanonicalSQL = canonicalSQL()

func canonicalSQL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT '%d:%s,'", len(chainTag), chainTag)
	for _, c := range hashedColumns {
		fmt.Fprintf(&b, "\n  || length(CAST(%s AS BLOB)) || ':' || %s || ','", c, c)
	}
	b.WriteString("\nFROM tool_calls")
	return b.String()
}

// canonical appends the canonical encoding of a row's hashed values (in hashedColumns' order,
// as SQLite returns them, int64, string, []byte or nil, or as the writer has them, int, bool
// and string) to b.
func canonical(b []byte, values []any) []byte {
	b = appendField(b, []byte(chainTag))
	var num [20]byte
	for _, v := range values {
		switch v := v.(type) {
		case int64:
			b = appendField(b, strconv.AppendInt(num[:0], v, 10))
		case int:
			b = appendField(b, strconv.AppendInt(num[:0], int64(v), 10))
		case bool:
			b = appendField(b, strconv.AppendInt(num[:0], b2i(v), 10))
		case string:
			b = appendField(b, []byte(v))
		case []byte:
			b = appendField(b, v)
		case nil:
			b = appendField(b, nil)
		default: // a float: only a hand-edited row holds one, and its hash will not match
			b = appendField(b, fmt.Append(nil, v))
		}
	}
	return b
}

func appendField(b, v []byte) []byte {
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, ':')
	b = append(b, v...)
	return append(b, ',')
}

func b2i(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// hashRow is the row_hash of a row's hashed values.
func hashRow(values []any) string {
	sum := sha256.Sum256(canonical(nil, values))
	return hex.EncodeToString(sum[:])
}

// sign is the row_sig of a row hash: HMAC-SHA256, under key, of the hash's hex text.
func sign(key []byte, rowHash string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(rowHash))
	return hex.EncodeToString(m.Sum(nil))
}

// KeyID is the id of a signing key as the journal stores it (sig_key_id): the first 8 bytes of
// the key's SHA-256, in hex. The key itself is never stored.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}
