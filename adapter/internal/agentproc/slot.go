package agentproc

import "sync"

// Conn is what a Slot holds: an adapter's stream to an agent (an *agent.Client and what the
// adapter keeps with it), a pointer.
type Conn interface {
	comparable
	Done() <-chan struct{}
	Violation() error
	Close() error
}

// Slot is a sandbox handle's agent stream: the live one, or the protocol violation that forbids
// another. The adapters' agentClient is Get; the zero Slot is empty. Safe for concurrent use.
type Slot[C Conn] struct {
	mu     sync.Mutex
	conn   C     // the zero C until set, or after it ended
	broken error // the protocol violation of an agent: no other is started
}

// Get returns the live stream. When there is none (none yet, or the last one ended) it calls dial
// under the slot's lock and keeps what dial returns (a zero C: none, e.g. the adapter falls back).
// An agent that broke the protocol is not replaced: Get then returns Broken for op, on this call
// and every later one (see agent.Client.Violation).
func (s *Slot[C]) Get(op string, dial func() (C, error)) (C, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero C
	if s.conn != zero {
		select {
		case <-s.conn.Done():
			if v := s.conn.Violation(); v != nil {
				s.broken = v
			}
			s.conn.Close()
			s.conn = zero
		default:
			return s.conn, nil
		}
	}
	if s.broken != nil {
		return zero, Broken(op, s.broken)
	}
	c, err := dial()
	if err != nil {
		return zero, err
	}
	s.conn = c
	return c, nil
}

// Current returns the stream as it is, live or ended (the zero C when there is none).
func (s *Slot[C]) Current() C {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// Set makes c the stream in place of the current one and returns a function that closes the one
// it replaced (if any): an adapter's first agent, or a test's hostile one
// (adapter/internal/hostileagent).
func (s *Slot[C]) Set(c C) (closeOld func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.conn
	s.conn = c
	return func() {
		var zero C
		if old != zero {
			old.Close()
		}
	}
}

// Close closes the stream, if any (the agent kills what it still runs in the foreground).
// Idempotent; a later Get starts another unless the closed one had broken the protocol.
func (s *Slot[C]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero C
	if s.conn != zero {
		if v := s.conn.Violation(); v != nil {
			s.broken = v
		}
		s.conn.Close()
		s.conn = zero
	}
}
