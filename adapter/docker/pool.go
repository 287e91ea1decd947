package docker

import (
	"context"
	"errors"
	"fmt"
	cerrdefs "github.com/containerd/errdefs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandboxer/sandboxer/errs"
)

// Pool keeps Size started sandboxes of one Config ready, so that Get hands one out without the
// container start latency; it starts a replacement in the background after each Get.
type Pool struct {
	cfg  Config
	eng  engine
	id   string
	size int

	ready  chan *Sandbox
	refill chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	lastErr error
}

// NewPool validates cfg, connects to the daemon and starts filling a pool of size sandboxes in the
// background. Errors: errs.InvalidInput (bad Config or size < 1), errs.SandboxUnavailable (daemon
// unreachable). A missing image shows up in Get.
func NewPool(ctx context.Context, cfg Config, size int) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if size < 1 {
		return nil, errs.New(errs.InvalidInput, "docker pool", "", "pool size must be at least 1, not %d", size)
	}
	eng, err := newEngine(ctx, cfg.Host)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &Pool{cfg: cfg, eng: eng, id: newID(), size: size, ready: make(chan *Sandbox, size),
		refill: make(chan struct{}, 1), ctx: pctx, cancel: cancel}
	p.wg.Add(1)
	go p.fill()
	p.kick()
	return p, nil
}

func (p *Pool) kick() {
	select {
	case p.refill <- struct{}{}:
	default:
	}
}

// fill tops the pool up whenever kicked, one container at a time.
func (p *Pool) fill() {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.refill:
		}
		for len(p.ready) < p.size && p.ctx.Err() == nil {
			sb, err := create(p.ctx, p.eng, p.cfg, p.id)
			p.mu.Lock()
			p.lastErr = err
			p.mu.Unlock()
			if err != nil {
				// Back off; Get reports the error if the pool stays empty.
				select {
				case <-p.ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			select {
			case p.ready <- sb:
			default:
				sb.Stop(context.Background())
			}
		}
	}
}

// Ready returns how many warm sandboxes are waiting.
func (p *Pool) Ready() int { return len(p.ready) }

// Get returns a started sandbox: a warm one when available, otherwise a new one created now. The
// caller owns it (Stop removes it). Errors as New, and errs.SandboxUnavailable after Close.
func (p *Pool) Get(ctx context.Context) (*Sandbox, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errs.New(errs.SandboxUnavailable, "docker pool", "", "pool is closed")
	}
	select {
	case sb := <-p.ready:
		p.kick()
		return sb, nil
	default:
	}
	p.kick()
	return create(ctx, p.eng, p.cfg, p.id)
}

// Close stops the background filler and removes the sandboxes still waiting in the pool (not the
// ones handed out). The engine connection stays usable by sandboxes already handed out.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	var errList []error
	for {
		select {
		case sb := <-p.ready:
			errList = append(errList, sb.Stop(ctx))
		default:
			return errors.Join(errList...)
		}
	}
}

// PruneOptions choose what Prune removes.
type PruneOptions struct {
	// All removes every sandboxer container, persistent ones and those of live processes included.
	All bool
}

// Info describes one sandboxer container.
type Info struct {
	ID          string // sandbox id
	ContainerID string
	Image       string
	State       string // "running", "exited", ...
	Owner       string // hostname:pid of the creator
	Persist     bool
	Pool        string
	Created     time.Time
}

// List returns the sandboxer containers of the daemon cfg.Host names.
func List(ctx context.Context, cfg Config) ([]Info, error) {
	eng, err := newEngine(ctx, cfg.Host)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	return list(ctx, eng)
}

func list(ctx context.Context, eng engine) ([]Info, error) {
	f := make(client.Filters).Add("label", LabelManaged+"=true")
	res, err := eng.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, classify("docker list", err)
	}
	out := make([]Info, 0, len(res.Items))
	for _, c := range res.Items {
		out = append(out, Info{
			ID: c.Labels[LabelID], ContainerID: c.ID, Image: c.Image, State: string(c.State),
			Owner: c.Labels[LabelOwner], Persist: c.Labels[LabelPersist] == "true", Pool: c.Labels[LabelPool],
			Created: time.Unix(c.Created, 0),
		})
	}
	return out, nil
}

// Prune removes sandboxer containers left behind by processes that ended without Stop: those not
// marked Persist whose creating process (hostname:pid) is gone from this host, and those that
// are not running. Containers created on another host are left alone unless o.All. The capped
// workspaces (under cfg.StateDir) of the removed containers, and of containers gone, are released.
// It returns the ids of the removed sandboxes.
func Prune(ctx context.Context, cfg Config, o PruneOptions) ([]string, error) {
	eng, err := newEngine(ctx, cfg.Host)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	all, err := list(ctx, eng)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errList []error
	for _, c := range all {
		if !o.All && !abandoned(c) {
			continue
		}
		_, err := eng.ContainerRemove(ctx, c.ContainerID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) { // gone or going
			errList = append(errList, fmt.Errorf("remove %s: %w", c.ID, err))
			continue
		}
		removed = append(removed, c.ID)
	}
	// What is left of sandboxes whose container is gone (their creator died and the daemon
	// removed them): streams directories and disks.
	if live, err := liveIDs(ctx, eng); err == nil {
		for _, dir := range staleDirs(streamsBase(), live) {
			removeStreamsDir(dir)
		}
		sweepDisks(cfg, live, removed)
	} else {
		sweepDisks(cfg, nil, removed)
	}
	return removed, classify("docker prune", errors.Join(errList...))
}

// abandoned reports whether c was left behind: not persistent, and either its creator (a process
// on this host) is gone, or its creator is unknown here and it is no longer running. A container
// of a live process is never abandoned, whatever its state: it may be between create and start,
// or about to be stopped by its owner.
func abandoned(c Info) bool {
	if c.Persist {
		return false
	}
	stopped := c.State == "exited" || c.State == "dead"
	host, pidText, ok := strings.Cut(c.Owner, ":")
	me, _ := os.Hostname()
	if !ok || host != me {
		return stopped
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return stopped
	}
	err = syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}
