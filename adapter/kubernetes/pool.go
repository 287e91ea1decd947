package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sandboxer/sandboxer/errs"
)

// Pool keeps Size sandbox pods of one configuration started ahead, labelled with its name, so that
// a claim (from this process or any other, see Claim) costs one label update instead of a pod start.
// Claimed pods are replaced in the background. Its methods are safe for concurrent use.
type Pool struct {
	k    *kube
	cfg  Config
	name string
	size int

	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once

	mu      sync.Mutex
	fillErr error      // the last refill's failure
	warm    []*Sandbox // this process's ready pods, each with its agent stream open
}

// NewPool starts a pool of size pods named name (a label value: letters, digits, '-', '.', '_')
// and returns at once; the pods start in the background.
func NewPool(ctx context.Context, cfg Config, name string, size int) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if name == "" || len(name) > 63 || size < 1 {
		return nil, errs.New(errs.InvalidInput, "pool", "", "a pool needs a name of 1 to 63 characters and a size of at least 1")
	}
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	p := &Pool{k: k, cfg: cfg, name: name, size: size, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	p.refill()
	return p, nil
}

func (p *Pool) refill() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// refillEvery is how often a pool checks that it still has its size.
const refillEvery = time.Second

// run keeps size pods of this process in the pool until Close.
func (p *Pool) run() {
	defer close(p.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-p.stop; cancel() }()
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-time.After(refillEvery): // claims by other processes kick nothing here
		}
		pods, err := p.k.listPods(ctx, selector(LabelPool+"="+p.name))
		if err != nil {
			p.setErr(p.k.classify("pool", err))
			continue
		}
		mine := 0
		for _, pod := range pods {
			if pod.Annotations[AnnotOwner] == owner() && pod.DeletionTimestamp == nil {
				mine++
			}
		}
		var wg sync.WaitGroup
		for range p.size - mine {
			wg.Go(func() {
				s, err := create(ctx, p.k, p.cfg, p.name)
				if err == nil {
					// The stream stays open for a claim of this process: its first command costs
					// one frame, not an exec through the apiserver and the kubelet.
					_, err = s.run(ctx, "pool", rawExec{args: []string{"true"}})
					if err != nil {
						s.Stop(context.WithoutCancel(ctx))
					}
				}
				p.setErr(err)
				if err == nil {
					p.mu.Lock()
					p.warm = append(p.warm, s)
					p.mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
}

// Err is the last refill's failure (nil once a refill succeeds again).
func (p *Pool) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fillErr
}

func (p *Pool) setErr(err error) {
	p.mu.Lock()
	p.fillErr = err
	p.mu.Unlock()
}

// Claim takes a ready pod of the pool (any process's) and returns it as the caller's sandbox; when
// none is ready it starts one as New does. The pool refills in the background.
func (p *Pool) Claim(ctx context.Context) (*Sandbox, error) {
	defer p.refill()
	for {
		s := p.takeWarm()
		if s == nil {
			break
		}
		_, err := p.k.patchPod(ctx, s.pod, claimPatch(s.rv, p.cfg))
		if apierrors.IsConflict(err) {
			// The pod changed since (the kubelet updates its status too): still ours to claim?
			if pod, gerr := p.k.getPod(ctx, s.pod); gerr == nil && pod.Labels[LabelPool] == p.name && ready(*pod) {
				_, err = p.k.patchPod(ctx, s.pod, claimPatch(pod.ResourceVersion, p.cfg))
			}
		}
		if err == nil {
			return s, nil
		}
		s.agent.Close() // another process claimed it (or it is gone)
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return nil, p.k.classify("claim", err)
		}
	}
	s, err := claim(ctx, p.k, p.cfg, p.name)
	if s != nil || err != nil {
		return s, err
	}
	return create(ctx, p.k, p.cfg, "")
}

// Claim takes a ready pod of the named pool, whichever process keeps it, with an optimistic update
// of its labels (a pod two callers race for goes to one of them). With no ready pod it returns
// errs.NotFound.
func Claim(ctx context.Context, cfg Config, pool string) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	s, err := claim(ctx, k, cfg, pool)
	if s == nil && err == nil {
		err = errs.New(errs.NotFound, "claim", "", "pool %q has no ready sandbox", pool)
	}
	return s, err
}

// claim returns nil, nil when the pool has no ready pod.
func claim(ctx context.Context, k *kube, cfg Config, pool string) (*Sandbox, error) {
	pods, err := k.listPods(ctx, selector(LabelPool+"="+pool))
	if err != nil {
		return nil, k.classify("claim", err)
	}
	for _, pod := range pods {
		if !ready(pod) {
			continue
		}
		got, err := k.patchPod(ctx, pod.Name, claimPatch(pod.ResourceVersion, cfg))
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // another claimer was first
		}
		if err != nil {
			return nil, k.classify("claim", err)
		}
		return &Sandbox{k: k, cfg: cfg, id: got.Labels[LabelID], pod: got.Name, network: got.Annotations[AnnotNetwork], agentBin: got.Annotations[AnnotAgentPath],
			workspaceHome: !mountsHome(got)}, nil
	}
	return nil, nil
}

// claimPatch takes a pod out of its pool for the caller, on the condition that its resourceVersion
// is still rv (nobody claimed or changed it since): the apiserver answers 409 Conflict otherwise.
func claimPatch(rv string, cfg Config) []byte {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": rv,
		"labels":          map[string]any{LabelPool: nil, LabelPersist: boolText(cfg.Persist)},
		"annotations":     map[string]string{AnnotOwner: owner()},
	}})
	return patch
}

// takeWarm pops one of this process's ready sandboxes, or nil.
func (p *Pool) takeWarm() *Sandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.warm) == 0 {
		return nil
	}
	s := p.warm[0]
	p.warm = p.warm[1:]
	return s
}

// ready: running, probed (create has annotated it), not being deleted.
func ready(p corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Annotations[AnnotNetwork] != ""
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Close stops refilling and deletes the pool's unclaimed pods that this process started.
// Idempotent.
func (p *Pool) Close(ctx context.Context) error {
	var err error
	p.closed.Do(func() {
		close(p.stop)
		<-p.done
		for s := p.takeWarm(); s != nil; s = p.takeWarm() {
			s.agent.Close()
		}
		var pods []corev1.Pod
		pods, err = p.k.listPods(ctx, selector(LabelPool+"="+p.name))
		if err != nil {
			err = p.k.classify("pool", err)
			return
		}
		var errList []error
		for _, pod := range pods {
			if pod.Annotations[AnnotOwner] == owner() {
				errList = append(errList, p.k.deleteSandbox(ctx, pod.Labels[LabelID]))
			}
		}
		err = errors.Join(errList...)
	})
	return err
}

// Ready counts the pool's ready pods (any process's).
func (p *Pool) Ready(ctx context.Context) (int, error) {
	pods, err := p.k.listPods(ctx, selector(LabelPool+"="+p.name))
	if err != nil {
		return 0, p.k.classify("pool", err)
	}
	n := 0
	for _, pod := range pods {
		if ready(pod) {
			n++
		}
	}
	return n, nil
}

// Name is the pool's name, which Claim takes.
func (p *Pool) Name() string { return p.name }

// Warm counts this process's ready pods, whose agent stream is open (a claim of one costs a label
// update and the command's frame).
func (p *Pool) Warm() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.warm)
}
