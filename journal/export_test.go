package journal

// Unchained makes j finish rows as before the hash chain (one UPDATE, nothing linked): the
// baseline of BenchmarkChain. Verify then reports its finished rows as inserted.
func Unchained(j *Journal) { j.unchained = true }

// SchemaV2 is the schema of version 2, for the test of its migration.
const SchemaV2 = schemaV2
