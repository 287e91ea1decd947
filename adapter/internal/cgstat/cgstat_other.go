//go:build !linux

package cgstat

import "github.com/sandboxer/sandboxer/adapter"

type meter struct{}

func (m *Meter) begin()                 {}
func (m *Meter) end(r *adapter.Receipt) {}

// ForPID is the zero Group off Linux.
func ForPID(int) Group { return Group{} }

// ForPath is the zero Group off Linux.
func ForPath(string) Group { return Group{} }

// Of is the zero Group off Linux.
func Of(string, []string) Group { return Group{} }
