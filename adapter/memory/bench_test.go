package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
)

// The comparison with the local adapter lives in ./membench; these run the memory adapter alone.

func BenchmarkMemoryEcho(b *testing.B) {
	sb, _ := memory.New(memory.Config{})
	ctx := context.Background()
	for _, args := range [][]string{{"sh", "-c", "echo hi"}, {"echo", "hi"}} {
		b.Run(strings.Join(args, " "), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sb.ExecuteCommand(ctx, adapter.Command{Args: args}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMemoryPipeline1MB(b *testing.B) {
	sb, _ := memory.New(memory.Config{})
	ctx := context.Background()
	line := "an ordinary line of text..\n"
	var data strings.Builder
	for i := 0; data.Len() < 1<<20; i++ {
		if i%10 == 0 {
			data.WriteString("line with x marks the spot\n")
		} else {
			data.WriteString(line)
		}
	}
	_ = sb.WriteFile(ctx, "f", []byte(data.String()))
	cmd := adapter.Command{Args: []string{"sh", "-c", "cat f | grep x | wc -l"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sb.ExecuteCommand(ctx, cmd); err != nil {
			b.Fatal(err)
		}
	}
}
