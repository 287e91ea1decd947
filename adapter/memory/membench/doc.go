// Package membench holds the memory adapter's benchmarks against the local adapter (the baseline,
// measured in the same run). It is a separate package so that the memory adapter's own tests do
// not depend on the local adapter building.
package membench
