//go:build race

package local_test

// raceDetector says the tests run under -race: the isolation helper is this test binary, and
// with the detector's shadow memory it holds several times what sandboxer's helper does.
const raceDetector = true
