package journal

// Unchained makes j finish rows as before the hash chain (one UPDATE, nothing linked): the
// baseline of BenchmarkChain. Verify then reports its finished rows as inserted.
func Unchained(j *Journal) { j.unchained = true }
