package journal

import (
	"context"
	"crypto/hmac"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Check names the check of Verify that a row failed (a wire value: `sandboxer log --verify
// --json` prints it).
type Check string

const (
	// CheckContentChanged: a row's columns no longer give its row_hash, or the next row of its
	// chain (or the run's head) was linked to another hash than the one it has now.
	CheckContentChanged Check = "content_changed"
	// CheckRowDeleted: a chain index is missing (in the middle, or at the end as the run's head
	// counts), or a run's head is missing or has no rows left.
	CheckRowDeleted Check = "row_deleted"
	// CheckRowInserted: a second row at one chain index, a row past the run's head, or a finished
	// row outside the chain written after the chain began.
	CheckRowInserted Check = "row_inserted"
	// CheckSignatureWrong: with a key, a row whose signature does not match, that another key
	// signed, or that is not signed.
	CheckSignatureWrong Check = "signature_wrong"
	// CheckKeyMissing: rows are signed and no key was given to check them.
	CheckKeyMissing Check = "key_missing"
)

// Mismatch is the first row Verify found wrong.
type Mismatch struct {
	RunID   string `json:"runId"`
	Index   int64  `json:"index"` // the chain index (0: a row outside the chain)
	ID      int64  `json:"id"`    // the row's id (0: the row is gone)
	Check   Check  `json:"check"`
	Message string `json:"message"`
}

func (m *Mismatch) String() string {
	return fmt.Sprintf("run %q, chain index %d, row id %d: %s: %s", m.RunID, m.Index, m.ID, m.Check, m.Message)
}

// Head is the head of a run's chain: how many rows it has and the last one's hash. Kept
// elsewhere (printed, committed, sent), it lets a later Verify see a journal cut short or
// rewritten from that row on.
type Head struct {
	RunID string `json:"runId"`
	Rows  int64  `json:"rows"`
	Hash  string `json:"headHash"`
}

// Verification is what Verify found.
type Verification struct {
	OK bool `json:"ok"`
	// Rows is the number of chained rows checked, Runs the number of runs with a chain.
	Rows int64 `json:"rows"`
	Runs int   `json:"runs"`
	// Signed is the number of signatures checked, with the key of KeyID.
	Signed int64  `json:"signed"`
	KeyID  string `json:"keyId,omitempty"`
	// Unchained rows were written before the journal had the chain (schema version 2 or
	// older): nothing proves them. Running rows are begun and not finished: they are linked when
	// they finish.
	Unchained int64 `json:"unchained"`
	Running   int64 `json:"running"`
	// Heads are the heads of the runs' chains, by run id.
	Heads []Head `json:"heads"`
	// Mismatch is the first row found wrong (nil when OK).
	Mismatch *Mismatch `json:"mismatch,omitempty"`
}

// Verify checks the hash chains of the journal's runs (of runID only, when not empty) as one
// consistent snapshot: every chained row's hash, each link to the row before, the chain indexes
// (no gap, no repeat), each run's head, and with Options.Key every signature. It reports the
// first row that fails a check in Verification.Mismatch. Errors: a database failure only.
func (j *Journal) Verify(ctx context.Context, runID string) (*Verification, error) {
	tx, err := j.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("journal: verify: %w", err)
	}
	defer tx.Rollback()
	v := &Verification{KeyID: j.keyID, Heads: []Head{}}
	c := chainCheck{j: j, v: v, heads: map[string]Head{}, seen: map[string]bool{}}
	if err := c.read(ctx, tx, runID); err != nil {
		return nil, fmt.Errorf("journal: verify: %w", err)
	}
	v.OK = v.Mismatch == nil
	return v, nil
}

// chainCheck is one Verify's walk over the rows, run by run, each run in chain order.
type chainCheck struct {
	j      *Journal
	v      *Verification
	legacy int64 // the highest id written before the chain
	heads  map[string]Head
	seen   map[string]bool // the runs with chained rows

	// the run being walked and its last chained row
	run                 string
	prevIndex, prevID   int64
	prevHash            string
	keyMissing          *Mismatch
	started, hadChained bool
}

func (c *chainCheck) read(ctx context.Context, tx *sql.Tx, runID string) error {
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MIN(legacy_max_id), 0) FROM chain_start`).Scan(&c.legacy); err != nil {
		return err
	}
	where, args := "", []any{}
	if runID != "" {
		where, args = " WHERE run_id = ?", []any{runID}
	}
	hs, err := tx.QueryContext(ctx, `SELECT run_id, last_index, head_hash FROM chain_heads`+where, args...)
	if err != nil {
		return err
	}
	for hs.Next() {
		var h Head
		if err := hs.Scan(&h.RunID, &h.Rows, &h.Hash); err != nil {
			hs.Close()
			return err
		}
		c.heads[h.RunID] = h
		c.v.Heads = append(c.v.Heads, h)
	}
	hs.Close()
	if err := hs.Err(); err != nil {
		return err
	}
	slices.SortFunc(c.v.Heads, func(a, b Head) int { return strings.Compare(a.RunID, b.RunID) })

	rows, err := tx.QueryContext(ctx, `SELECT `+strings.Join(hashedColumns, ", ")+`, row_hash, row_sig, sig_key_id
		FROM tool_calls`+where+` ORDER BY run_id, chain_index, id`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := len(hashedColumns)
	vals := make([]any, n)
	var rowHash, sig, keyID sql.NullString
	dst := make([]any, 0, n+3)
	for i := range vals {
		dst = append(dst, &vals[i])
	}
	dst = append(dst, &rowHash, &sig, &keyID)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return err
		}
		if m := c.row(vals, rowHash.String, sig, keyID); m != nil {
			c.v.Mismatch = m
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if m := c.endRun(); m != nil {
		c.v.Mismatch = m
		return nil
	}
	for _, h := range c.v.Heads {
		if !c.seen[h.RunID] {
			c.v.Mismatch = &Mismatch{RunID: h.RunID, Index: 1, Check: CheckRowDeleted,
				Message: fmt.Sprintf("the run's head counts %d rows; none is left", h.Rows)}
			return nil
		}
	}
	c.v.Mismatch = c.keyMissing // hash checks first: a changed row is named before a missing key
	return nil
}

// row checks one row (vals: its hashedColumns) against the row before it in its run's chain.
func (c *chainCheck) row(vals []any, rowHash string, sig, keyID sql.NullString) *Mismatch {
	id, _ := vals[0].(int64)
	run := fmt.Sprint(vals[1])
	if !c.started || run != c.run {
		if m := c.endRun(); m != nil {
			return m
		}
		c.run, c.started, c.hadChained = run, true, false
		c.prevIndex, c.prevID, c.prevHash = 0, 0, ""
	}
	mismatch := func(index, id int64, check Check, format string, args ...any) *Mismatch {
		return &Mismatch{RunID: run, Index: index, ID: id, Check: check, Message: fmt.Sprintf(format, args...)}
	}
	if vals[len(vals)-2] == nil { // chain_index NULL: not linked
		switch {
		case vals[11] == string(StatusRunning):
			c.v.Running++
		case id <= c.legacy:
			c.v.Unchained++
		default:
			return mismatch(0, id, CheckRowInserted, "a finished row outside the chain, written after the chain began (ids above %d are linked when they finish)", c.legacy)
		}
		return nil
	}
	index, ok := vals[len(vals)-2].(int64)
	if !ok {
		return mismatch(0, id, CheckContentChanged, "chain_index %v is not an integer", vals[len(vals)-2])
	}
	if !c.hadChained {
		c.v.Runs++
		c.hadChained, c.seen[run] = true, true
	}
	c.v.Rows++
	head, hasHead := c.heads[run]
	switch {
	case index <= c.prevIndex:
		return mismatch(index, id, CheckRowInserted, "a second row at chain index %d (the first is row id %d)", index, c.prevID)
	case index > c.prevIndex+1:
		return mismatch(c.prevIndex+1, 0, CheckRowDeleted, "chain index %d is missing: the chain goes from index %d to %d (row id %d)", c.prevIndex+1, c.prevIndex, index, id)
	case hasHead && index > head.Rows:
		return mismatch(index, id, CheckRowInserted, "past the run's head, which counts %d rows", head.Rows)
	}
	if got := hashRow(vals); got != rowHash {
		return mismatch(index, id, CheckContentChanged, "the row's columns hash to %s, its row_hash is %q", got, rowHash)
	}
	if prev := fmt.Sprint(vals[len(vals)-1]); prev != c.prevHash {
		return mismatch(c.prevIndex, c.prevID, CheckContentChanged, "its row_hash is %s, but the next row (id %d) was linked to %s: the row was rewritten with a new hash, or replaced", c.prevHash, id, prev)
	}
	if m := c.signature(index, id, rowHash, sig, keyID, mismatch); m != nil {
		return m
	}
	c.prevIndex, c.prevID, c.prevHash = index, id, rowHash
	return nil
}

// signature checks a chained row's signature against the journal's key.
func (c *chainCheck) signature(index, id int64, rowHash string, sig, keyID sql.NullString,
	mismatch func(index, id int64, check Check, format string, args ...any) *Mismatch) *Mismatch {
	key := c.j.key
	switch {
	case key == nil:
		if sig.Valid && c.keyMissing == nil {
			c.keyMissing = mismatch(index, id, CheckKeyMissing, "the row is signed (key id %s): give the key to check the signatures", keyID.String)
		}
	case !sig.Valid:
		return mismatch(index, id, CheckSignatureWrong, "the row is not signed")
	case keyID.String != c.j.keyID:
		return mismatch(index, id, CheckSignatureWrong, "signed with key id %q, not with the given key (id %s)", keyID.String, c.j.keyID)
	case !hmac.Equal([]byte(sign(key, rowHash)), []byte(sig.String)):
		return mismatch(index, id, CheckSignatureWrong, "the signature does not match the row hash under the given key (id %s)", c.j.keyID)
	default:
		c.v.Signed++
	}
	return nil
}

// endRun checks the end of the run walked so far against its head.
func (c *chainCheck) endRun() *Mismatch {
	if !c.hadChained {
		return nil
	}
	head, ok := c.heads[c.run]
	m := &Mismatch{RunID: c.run}
	switch {
	case !ok:
		m.Index, m.Check = c.prevIndex+1, CheckRowDeleted
		m.Message = fmt.Sprintf("the run's head (chain_heads) is missing; its chain has %d rows", c.prevIndex)
	case head.Rows > c.prevIndex:
		m.Index, m.Check = c.prevIndex+1, CheckRowDeleted
		m.Message = fmt.Sprintf("the run's head counts %d rows, the chain ends at index %d (row id %d)", head.Rows, c.prevIndex, c.prevID)
	case head.Hash != c.prevHash:
		m.Index, m.ID, m.Check = c.prevIndex, c.prevID, CheckContentChanged
		m.Message = fmt.Sprintf("its row_hash is %s, the run's head names %s: the row was rewritten with a new hash, or replaced", c.prevHash, head.Hash)
	default:
		return nil
	}
	return m
}
