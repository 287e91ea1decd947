// Package ocibench holds the oci adapter's benchmarks against their baselines, measured in the
// same run: a bare `runc run` (or `runsc run`) of true from a prepared bundle for a cold start,
// the docker adapter for a command's round trip, the local adapter for file calls. It is a
// separate package so that the oci adapter's own tests do not depend on other adapters.
//
// The ...Pair benchmarks run the adapter and its baseline alternately and report the ratio of
// their medians (x-base), which a shared machine's changing load does not skew:
//
//	go test -run '^$' -bench ColdCreatePair -benchtime 20x -count 3 ./adapter/oci/ocibench/
//	go test -run '^$' -bench 'ExecTruePair|Files4KiBPair' -benchtime 300x -count 3 ./adapter/oci/ocibench/
//	go test -run '^$' -bench . -count 5 ./adapter/oci/ocibench/ | benchstat -
package ocibench
