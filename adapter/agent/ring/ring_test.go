package ring

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// The agent is built from this source with the standard library only: these tests use no
// testify either.

func check(t *testing.T, got Chunk, stdout, stderr string, offset, dropped int64) {
	t.Helper()
	if string(got.Stdout) != stdout || string(got.Stderr) != stderr || got.Offset != offset || got.Dropped != dropped {
		t.Fatalf("got stdout %q stderr %q offset %d dropped %d; want %q %q %d %d",
			got.Stdout, got.Stderr, got.Offset, got.Dropped, stdout, stderr, offset, dropped)
	}
}

func write(t *testing.T, b *Buffer, st Stream, s string) {
	t.Helper()
	if n, err := b.Write(st, []byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write: %d, %v", n, err)
	}
}

func TestOffsetsInterleave(t *testing.T) {
	b := New(100)
	check(t, b.Read(0), "", "", 0, 0)
	write(t, b, Stdout, "abc")
	write(t, b, Stderr, "XY")
	write(t, b, Stdout, "de")
	write(t, b, Stdout, "f")
	write(t, b, Stderr, "Z")
	// global: a0 b1 c2 X3 Y4 d5 e6 f7 Z8
	check(t, b.Read(0), "abcdef", "XYZ", 9, 0)
	check(t, b.Read(2), "cdef", "XYZ", 9, 0)
	check(t, b.Read(3), "def", "XYZ", 9, 0)
	check(t, b.Read(4), "def", "YZ", 9, 0)
	check(t, b.Read(5), "def", "Z", 9, 0)
	check(t, b.Read(8), "", "Z", 9, 0)
	check(t, b.Read(9), "", "", 9, 0)
	check(t, b.Read(-7), "abcdef", "XYZ", 9, 0)
	// Beyond the end: nothing, and the end.
	check(t, b.Read(1000), "", "", 9, 0)
	// Limits cut on the global order.
	check(t, b.ReadLimit(0, 4), "abc", "X", 4, 0)
	check(t, b.ReadLimit(4, 4), "def", "Y", 8, 0)
	check(t, b.ReadLimit(8, 4), "", "Z", 9, 0)
	if _, err := b.Write(Stdout, nil); err != nil {
		t.Fatal(err)
	}
	if end, closed := b.End(); end != 9 || closed {
		t.Fatalf("End: %d %v", end, closed)
	}
}

func TestWrapAroundAndDropped(t *testing.T) {
	b := New(4)
	write(t, b, Stdout, "ab")
	write(t, b, Stdout, "cd")
	check(t, b.Read(0), "abcd", "", 4, 0)
	write(t, b, Stdout, "ef") // wraps: holds cdef
	check(t, b.Read(0), "cdef", "", 6, 2)
	check(t, b.Read(1), "cdef", "", 6, 1)
	check(t, b.Read(3), "def", "", 6, 0)
	write(t, b, Stderr, "1234567") // one write larger than the ring: holds 4567
	check(t, b.Read(0), "cdef", "4567", 13, 5)
	check(t, b.Read(6), "", "4567", 13, 3)
	check(t, b.Read(11), "", "67", 13, 0)
	write(t, b, Stdout, "g") // holds defg; global offsets: c2 d3 e4 f5 ... g13
	check(t, b.Read(0), "defg", "4567", 14, 6)
	check(t, b.Read(4), "efg", "4567", 14, 3)
	// A far-behind limited reader starts at the oldest held byte, and its Dropped counts the skip.
	check(t, b.ReadLimit(0, 2), "de", "", 5, 3)
	check(t, b.ReadLimit(5, 2), "f", "", 7, 1)
	check(t, b.ReadLimit(7, 3), "", "456", 12, 2) // stderr's 1..3 (offsets 6..8) are gone
	check(t, b.ReadLimit(12, 3), "g", "7", 14, 0)
}

func TestGrowsLazily(t *testing.T) {
	b := New(1 << 20)
	write(t, b, Stdout, "x")
	if n := cap(b.s[Stdout].buf); n > 8192 {
		t.Fatalf("a 1-byte write allocated %d bytes", n)
	}
	if b.s[Stderr].buf != nil {
		t.Fatal("an unused stream allocated")
	}
	big := bytes.Repeat([]byte("y"), 3<<20)
	if _, err := b.Write(Stdout, big); err != nil {
		t.Fatal(err)
	}
	if n := cap(b.s[Stdout].buf); n != 1<<20 {
		t.Fatalf("ring is %d bytes", n)
	}
	c := b.Read(0)
	if len(c.Stdout) != 1<<20 || c.Dropped != 3<<20+1-1<<20 || c.Offset != 3<<20+1 {
		t.Fatalf("got %d bytes, dropped %d, offset %d", len(c.Stdout), c.Dropped, c.Offset)
	}
}

// Alternating tiny writes are bounded by the segment cap: the oldest bytes go, and count.
func TestSegmentCap(t *testing.T) {
	b := New(1 << 10) // maxSegs 16
	for i := range 100 {
		write(t, b, Stdout, "o")
		write(t, b, Stderr, fmt.Sprint(i%10))
	}
	if len(b.s[Stdout].segs) > b.maxSegs || len(b.s[Stderr].segs) > b.maxSegs {
		t.Fatalf("segments: %d %d (max %d)", len(b.s[Stdout].segs), len(b.s[Stderr].segs), b.maxSegs)
	}
	c := b.Read(0)
	if len(c.Stdout) != 16 || len(c.Stderr) != 16 || c.Dropped != 200-32 || c.Offset != 200 {
		t.Fatalf("got %q %q dropped %d offset %d", c.Stdout, c.Stderr, c.Dropped, c.Offset)
	}
	if string(c.Stderr) != "4567890123456789" {
		t.Fatalf("stderr %q", c.Stderr)
	}
	// Same-stream writes extend one segment.
	b2 := New(1 << 10)
	for range 100 {
		write(t, b2, Stdout, "o")
	}
	if len(b2.s[Stdout].segs) != 1 {
		t.Fatalf("%d segments for one run", len(b2.s[Stdout].segs))
	}
}

func TestCloseAndWait(t *testing.T) {
	b := New(16)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an empty buffer with a done context: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Wait(context.Background(), 0) }()
	write(t, b, Stdout, "hi")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Nothing after offset 2 yet: a waiter blocks until Close.
	go func() { done <- b.Wait(context.Background(), 2) }()
	ch := b.Changed()
	select {
	case <-ch:
		t.Fatal("Changed fired without a change")
	default:
	}
	b.Close()
	b.Close()
	<-ch
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-b.Changed() // closed: at once
	if _, err := b.Write(Stderr, []byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	c := b.Read(0)
	if !c.Closed || string(c.Stdout) != "hi" || c.Offset != 2 {
		t.Fatalf("after Close: %+v", c)
	}
	if end, closed := b.End(); end != 2 || !closed {
		t.Fatalf("End: %d %v", end, closed)
	}
	var w interface{ Write([]byte) (int, error) } = b.Writer(Stdout)
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Writer after Close: %v", err)
	}
}

// model is the obvious implementation: every byte ever written, with its stream, in order, and
// the runs (maximal same-stream sequences of writes) it belongs to.
type model struct {
	stream []Stream
	data   []byte
	run    []int // per byte: the index of its run within its stream
	pos    []int // per byte: its offset within its stream
	runs   [2]int
	count  [2]int
	last   Stream
}

func (m *model) write(st Stream, p []byte) {
	if len(p) == 0 {
		return
	}
	if m.last != st || m.runs[st] == 0 {
		m.runs[st]++
		m.last = st
	}
	for _, c := range p {
		m.stream = append(m.stream, st)
		m.data = append(m.data, c)
		m.run = append(m.run, m.runs[st]-1)
		m.pos = append(m.pos, m.count[st])
		m.count[st]++
	}
}

// held reports whether the byte at global offset g is still held by a ring of size bytes that
// keeps at most maxSegs runs per stream.
func (m *model) held(g int, size, maxSegs int) bool {
	st := m.stream[g]
	later := m.count[st] - 1 - m.pos[g]
	return later < size && m.run[g] >= m.runs[st]-maxSegs
}

func (m *model) read(since int64, limit int, size, maxSegs int) Chunk {
	end := int64(len(m.data))
	c := Chunk{Offset: end}
	since = max(since, 0)
	if since >= end {
		return c
	}
	from := since
	for from < end && !m.held(int(from), size, maxSegs) {
		from++
	}
	upto := end
	if limit > 0 && upto-from > int64(limit) {
		upto = from + int64(limit)
	}
	for g := from; g < upto; g++ {
		if !m.held(int(g), size, maxSegs) {
			continue
		}
		if m.stream[g] == Stdout {
			c.Stdout = append(c.Stdout, m.data[g])
		} else {
			c.Stderr = append(c.Stderr, m.data[g])
		}
	}
	c.Offset = upto
	c.Dropped = upto - since - int64(len(c.Stdout)) - int64(len(c.Stderr))
	return c
}

func TestAgainstModel(t *testing.T) {
	for seed := range int64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			size := 1 + rng.Intn(200)
			if seed%4 == 0 {
				size = 2000 // segment cap (31) hit before the byte bound
			}
			b := New(size)
			m := &model{last: -1}
			var g byte
			for range 300 {
				if rng.Intn(3) > 0 {
					st := Stream(rng.Intn(2))
					p := make([]byte, rng.Intn(size*3/2+2))
					if rng.Intn(4) == 0 {
						p = p[:min(len(p), rng.Intn(3))]
					}
					for i := range p {
						g++
						p[i] = g
					}
					write(t, b, st, string(p))
					m.write(st, p)
					continue
				}
				end := int64(len(m.data))
				since := rng.Int63n(end+10) - 5
				limit := 0
				if rng.Intn(2) == 0 {
					limit = rng.Intn(size*2 + 1)
				}
				got, want := b.ReadLimit(since, limit), m.read(since, limit, size, b.maxSegs)
				if !bytes.Equal(got.Stdout, want.Stdout) || !bytes.Equal(got.Stderr, want.Stderr) ||
					got.Offset != want.Offset || got.Dropped != want.Dropped {
					t.Fatalf("ReadLimit(%d, %d) of %d (size %d):\n got %d %d bytes, offset %d dropped %d\nwant %d %d bytes, offset %d dropped %d",
						since, limit, end, size, len(got.Stdout), len(got.Stderr), got.Offset, got.Dropped,
						len(want.Stdout), len(want.Stderr), want.Offset, want.Dropped)
				}
				for i := range b.s {
					s := &b.s[i]
					if s.n > size || len(s.buf) > size || len(s.segs) > b.maxSegs {
						t.Fatalf("stream %d: %d held, %d buffer, %d segments", i, s.n, len(s.buf), len(s.segs))
					}
				}
			}
		})
	}
}

// A reader following a writer of both streams, with the offset it is given, sees every byte once
// and in order when the rings are large enough; when they are not, what it sees is in order and
// what it misses is counted exactly.
func TestConcurrentReaderFollows(t *testing.T) {
	for _, size := range []int{1 << 20, 64} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			b := New(size)
			const perStream = 20000
			var wg sync.WaitGroup
			var wmu sync.Mutex // the two writers' counters interleave under one order
			for st := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perStream {
						var p [4]byte
						binary.BigEndian.PutUint32(p[:], uint32(i))
						wmu.Lock()
						_, err := b.Write(Stream(st), p[:])
						wmu.Unlock()
						if err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			go func() { wg.Wait(); b.Close() }()

			var since, dropped int64
			var got [2][]byte
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for {
				c := b.ReadLimit(since, 1+int(since%97)*13)
				if c.Offset < since {
					t.Fatalf("offset went back: %d after %d", c.Offset, since)
				}
				got[Stdout] = append(got[Stdout], c.Stdout...)
				got[Stderr] = append(got[Stderr], c.Stderr...)
				dropped += c.Dropped
				since = c.Offset
				if end, closed := b.End(); closed && since == end {
					break
				}
				if err := b.Wait(ctx, since); err != nil {
					t.Fatal(err)
				}
			}
			if since != 2*perStream*4 {
				t.Fatalf("ended at %d", since)
			}
			if int64(len(got[0])+len(got[1]))+dropped != since {
				t.Fatalf("%d + %d bytes read and %d dropped do not add up to %d", len(got[0]), len(got[1]), dropped, since)
			}
			for st := range got {
				// A ring that holds everything loses nothing: each stream's counters all come, in
				// order, once.
				if size == 1<<20 {
					if dropped != 0 || len(got[st]) != perStream*4 {
						t.Fatalf("stream %d: %d bytes, %d dropped", st, len(got[st]), dropped)
					}
					for i := range perStream {
						if v := binary.BigEndian.Uint32(got[st][4*i:]); v != uint32(i) {
							t.Fatalf("stream %d: counter %d is %d", st, i, v)
						}
					}
				}
			}
		})
	}
}

// Many readers and writers at once: for the race detector.
func TestConcurrentMixed(t *testing.T) {
	b := New(512)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 2000 {
				if i%2 == 0 {
					b.Write(Stream(j%2), bytes.Repeat([]byte{byte(j)}, j%300))
				} else {
					c := b.ReadLimit(int64(j*37), j%700)
					if len(c.Stdout) > 512 || len(c.Stderr) > 512 {
						t.Errorf("read %d+%d bytes from a 512-byte ring", len(c.Stdout), len(c.Stderr))
						return
					}
					_ = b.Changed()
				}
			}
		}()
	}
	wg.Wait()
	b.Close()
}
