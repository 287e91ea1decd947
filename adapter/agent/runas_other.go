//go:build !linux

package agent

import "errors"

// Protect is for Linux, where the agent runs.
func Protect() error { return errors.New("the agent runs on Linux") }

func asCommands(f func()) { f() }

func peerUID(uintptr) (int, error) { return -1, errors.New("no SO_PEERCRED here") }
