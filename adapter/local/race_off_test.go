//go:build !race

package local_test

// raceDetector says the tests run under -race (see race_on_test.go).
const raceDetector = false
