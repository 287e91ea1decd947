// Package inherited closes the descriptors a long-lived process of sandboxer inherited from
// whoever started it (the resident server, the adapters' janitors, the local adapter's helpers):
// a caller's flock or the write end of its pipeline on descriptor 5 must not stay open for the
// lifetime of a process the caller does not wait for.
package inherited
