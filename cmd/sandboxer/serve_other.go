//go:build !linux

package main

// serve is Linux's only: elsewhere every call runs in a process of its own.
func serve(engine string, args []string) (int, bool, error) { return 0, false, nil }
