package ui

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/journal"
)

var updateScreenshots = flag.Bool("update", false, "write the screenshots of docs/ui.md (docs/images/ui-*.png)")

// browser starts headless Chromium for t, or skips t without it (fails where
// SANDBOXER_TEST_REQUIRE names chromium).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if testenv.Required("chromium") {
			t.Fatalf("chromium not found: %v", err)
		}
		t.Skipf("chromium not found (SANDBOXER_TEST_REQUIRE=chromium fails instead): %v", err)
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1440, 900), chromedp.Flag("lang", "en-US"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// A bound for a browser that hangs, not a measure: every step waits for what the page shows.
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// waitJS waits until the JavaScript expression is true in the page.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))(ctx, t)
		return err
	})
}

// setInput sets a form field's value as a person's typing would (with its input event).
func setInput(sel, value string) chromedp.Action[chromedp.Void] {
	return eval(fmt.Sprintf(`(e => { e.value = %q; e.dispatchEvent(new Event("input")); })(document.querySelector(%q))`, value, sel))
}

// eval evaluates a JavaScript expression and ignores its value.
func eval(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](expr)
}

func screenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if !*updateScreenshots {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "images", "ui-"+name+".png"), png, 0o644))
}

// TestBrowser drives the page in a real browser: the runs, a call's input, output, error,
// egress decisions and receipt, the retry warning, search, a call recorded while the page is
// open appearing without a reload, and the token.
func TestBrowser(t *testing.T) {
	path, j := fixture(t)
	s, hs := newTestServer(t, path)
	ctx := browser(t)
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return s
	}

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(hs.URL+"/?token="+s.Token()),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
	))
	runs := text("#runs tbody")
	assert.Contains(t, runs, "run-a")
	assert.Contains(t, runs, "run-b")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.NotContains(t, loc, s.Token(), "the token leaves the address bar once the cookie holds it")

	// A run's calls, on the list and the timeline; a call's detail.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#runs tr[data-run="run-a"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#calls tr[data-id="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .bar[data-id="3"]`)),
		chromedp.Click(chromedp.CSS(`#calls tr[data-id="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail [data-part="receipt"]`)),
	))
	assert.Contains(t, text("#tasks"), "build #0 a2")
	detail := text("#detail")
	for _, want := range []string{`"cmd": "go"`, "building", "proxy.example.com", "evil.example", "refused",
		"not in the allowlist", "peakMemoryBytes", "52428800", "main.go", "go.sum", "created"} {
		assert.Contains(t, detail, want)
	}
	screenshot(ctx, t, "call")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#calls tr[data-id="2"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail [data-part="error"]`))))
	assert.Contains(t, text("#detail"), "TOOL_PATH_ESCAPE: path escapes the root")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#timeline .bar[data-id="3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail [data-part="retry warning"]`))))
	assert.Contains(t, text("#detail"), journal.WarningPrefix)
	screenshot(ctx, t, "retry")

	// Search over all runs.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#runs tr[data-run=""]`)),
		waitJS(`document.querySelectorAll("#calls tbody tr").length === 5`),
		chromedp.SendKeys(chromedp.CSS("#q"), "needle"),
		waitJS(`document.querySelectorAll("#calls tbody tr").length === 1`),
	))
	assert.Contains(t, text("#calls tbody"), "grep")
	require.NoError(t, chromedp.Do(ctx,
		setInput("#q", ""),
		setInput("#status", "error"),
		waitJS(`document.querySelectorAll("#calls tbody tr").length === 1 && document.querySelector("#calls tbody tr").dataset.id === "2"`),
	))

	// Live: a call recorded while the page is open appears without a reload.
	require.NoError(t, chromedp.Do(ctx,
		setInput("#status", ""),
		chromedp.Click(chromedp.CSS(`#runs tr[data-run="run-b"]`)),
		waitJS(`document.querySelectorAll("#calls tbody tr").length === 2`),
		eval(`window.loadedOnce = true`),
	))
	require.NoError(t, j.Record(context.Background(), journal.Entry{RunID: "run-b", NodeID: "lint", Attempt: 1, Seq: 3,
		ToolName: "bash", InputJSON: `{"cmd":"echo","args":["live-call-marker"]}`, OutputJSON: `{"output":"live-call-marker\n"}`,
		Status: journal.StatusSuccess, StartedAtMs: fixtureStart + 5000, FinishedAtMs: fixtureStart + 5600}))
	require.NoError(t, chromedp.Do(ctx,
		waitJS(`document.querySelector("#calls tbody").textContent.includes("live-call-marker")`),
		waitJS(`[...document.querySelectorAll("#runs tbody tr")].some(tr => tr.dataset.run === "run-b" && tr.textContent.includes("3"))`),
	))
	sameDocument, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.loadedOnce === true`))
	require.NoError(t, err)
	assert.True(t, sameDocument, "the page was not reloaded")
	screenshot(ctx, t, "runs")

	// The page's requests carry the cookie; one without it (or the token) gets 403.
	statuses, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`Promise.all([
		fetch("/api/runs").then(r => r.status),
		fetch("/api/runs", {credentials: "omit"}).then(r => r.status)])`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, []int{200, 403}, statuses)
	assert.False(t, strings.Contains(text("body"), s.Token()), "the token is not shown in the page")
}
