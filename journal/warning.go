package journal

import (
	"context"
	"fmt"
	"strings"
)

// WarningPrefix starts every retry warning, so agents and tests can find it.
const WarningPrefix = "[sandboxer:tool-resume-warning]"

// WarningListMax is how many earlier calls a retry warning lists by name.
const WarningListMax = 5

// PriorCall is one call of an earlier attempt that a retry warning lists.
type PriorCall struct {
	ToolName string `json:"toolName"`
	Attempt  int    `json:"attempt"`
	Seq      int    `json:"seq"`
	Status   Status `json:"status"`
}

// PriorSideEffects returns, in (attempt, seq) order, the calls that earlier attempts of pos's
// (run, node, iteration) made to tools with sideEffect && !idempotent. It is empty for attempt <= 1.
// Errors: a database failure.
func (j *Journal) PriorSideEffects(ctx context.Context, pos Position) ([]PriorCall, error) {
	if pos.Attempt <= 1 {
		return nil, nil
	}
	st, err := j.earlier.stmt(ctx, j.db)
	if err != nil {
		return nil, fmt.Errorf("journal: earlier attempts: %w", err)
	}
	rows, err := st.QueryContext(ctx, pos.RunID, pos.NodeID, pos.Iteration, pos.Attempt)
	if err != nil {
		return nil, fmt.Errorf("journal: earlier attempts: %w", err)
	}
	defer rows.Close()
	var out []PriorCall
	for rows.Next() {
		var c PriorCall
		var status string
		if err := rows.Scan(&c.ToolName, &c.Attempt, &c.Seq, &status); err != nil {
			return nil, fmt.Errorf("journal: earlier attempts: %w", err)
		}
		c.Status = Status(status)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: earlier attempts: %w", err)
	}
	return out, nil
}

// ResumeWarning returns the retry warning for pos ("" when there is nothing to warn about: attempt
// 1, or no earlier side-effecting, non-idempotent call). Errors: a database failure.
func (j *Journal) ResumeWarning(ctx context.Context, pos Position) (string, error) {
	calls, err := j.PriorSideEffects(ctx, pos)
	if err != nil {
		return "", err
	}
	return FormatWarning(pos, calls), nil
}

// FormatWarning renders the retry warning for calls (see ResumeWarning); "" when calls is empty.
// It lists at most WarningListMax calls and says how many more there were.
func FormatWarning(pos Position, calls []PriorCall) string {
	if len(calls) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s This is attempt %d of node %q (run %q, iteration %d). Earlier attempts already called %d side-effecting, non-idempotent tool(s):\n",
		WarningPrefix, pos.Attempt, pos.NodeID, pos.RunID, pos.Iteration, len(calls))
	for i, c := range calls {
		if i == WarningListMax {
			fmt.Fprintf(&b, "...and %d more\n", len(calls)-WarningListMax)
			break
		}
		fmt.Fprintf(&b, "- %s (attempt %d, seq %d, %s)\n", c.ToolName, c.Attempt, c.Seq, c.Status)
	}
	b.WriteString("Check the current state before repeating any of them. Calls at the same position reuse the same idempotency key, so an API that deduplicates by key will not apply them twice.")
	return b.String()
}
