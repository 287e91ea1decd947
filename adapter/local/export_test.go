package local

// NewWithoutPidfd is New for a sandbox that collects its plain commands as on a kernel without
// pidfds: through collectAsync, a goroutine per pipe and one waiting for the exit.
func NewWithoutPidfd(cfg Config) (*Sandbox, error) {
	s, err := New(cfg)
	if s != nil {
		s.noPidfd = true
	}
	return s, err
}
