#!/usr/bin/env bash
# The single-node Kubernetes of ../shared/k8s-fixture (its README) as a CI tool for the kubernetes
# adapter's tests (issue 24):
#
#   .ci/kubernetes.sh build          # only build the binaries (CI starts it early, in the background)
#   eval "$(.ci/kubernetes.sh up)"   # build if needed, bring up, import the sandbox image, namespace
#   .ci/kubernetes.sh down           # stop everything up started
#
# `up` prints only the variables the tests read, as export lines, on stdout; its progress goes to
# stderr. It is idempotent: a fixture that is already up is reused (the image is imported again and
# the namespace kept). K8S_FIXTURE_DIR (default /tmp/sandboxer-k8s) is where the fixture lives, its
# binaries included (cold/bin: ~14 min to build from the Go module proxy on 2 cores, reused when
# present, and kept in K8S_CACHE, default /var/cache/sandboxer-ci/k8s-VERSION, where the machine
# keeps it); K8S_FIXTURE_SRC (default ../shared/k8s-fixture beside this repository) its scripts.
set -Eeuo pipefail # -E: the ERR trap of up reaches its functions
repo=$(cd "$(dirname "$0")/.." && pwd)
: "${K8S_FIXTURE_DIR:=/tmp/sandboxer-k8s}"
: "${K8S_FIXTURE_SRC:=$(dirname "$0")/../../shared/k8s-fixture}"
export K8S_FIXTURE_DIR
F=$K8S_FIXTURE_DIR
NAMESPACE=sandboxer-test
IMAGE=localhost/sandboxer-sandbox:latest # the fixture has no registry: pods use imagePullPolicy Never
KC=$F/kubeconfig/admin.kubeconfig
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

: "${K8S_CACHE:=/var/cache/sandboxer-ci/k8s-$(sed -n 's/^V=${V:-\(v[0-9.]*\)}.*/\1/p' "$K8S_FIXTURE_SRC/build.sh")}"

log() { echo "kubernetes.sh: $*" >&2; }
kubectl() { "$F/bin/kubectl" --kubeconfig "$KC" "$@"; }

# running: the apiserver answers and the node is Ready.
running() {
	[ -x "$F/bin/kubectl" ] && [ -f "$F/pids/apiserver" ] && kill -0 "$(cat "$F/pids/apiserver")" 2>/dev/null &&
		[ -f "$F/pids/kubelet" ] && kill -0 "$(cat "$F/pids/kubelet")" 2>/dev/null &&
		[ "$(kubectl get --raw /readyz 2>/dev/null)" = ok ] &&
		kubectl wait --for=condition=Ready node/localhost --timeout=30s >/dev/null 2>&1
}

# fixture_logs shows the end of each component's log after a failure.
fixture_logs() {
	for l in "$F"/logs/*.log; do
		[ -f "$l" ] || continue
		echo "--- $l" >&2
		tail -n 15 "$l" >&2
	done
}

# build makes the fixture's binaries in $F/cold/bin: from the cache when it holds them, else from
# the Go module proxy (then cached).
build() {
	local src
	src=$(cd "$K8S_FIXTURE_SRC" && pwd)
	if [ -x "$F/cold/bin/kubelet" ]; then
		return
	fi
	if [ -x "$K8S_CACHE/kubelet" ]; then
		log "the Kubernetes binaries from $K8S_CACHE"
		mkdir -p "$F/cold/bin"
		cp "$K8S_CACHE/"* "$F/cold/bin/"
		return
	fi
	log "building the Kubernetes binaries into $F/cold/bin (about 14 minutes from cold)"
	env K8S_FIXTURE_DIR="$F" bash "$src/build.sh" >&2
	if mkdir -p "$K8S_CACHE.tmp" 2>/dev/null && cp "$F/cold/bin/"* "$K8S_CACHE.tmp/"; then
		rm -rf "$K8S_CACHE" && mv "$K8S_CACHE.tmp" "$K8S_CACHE"
	else
		rm -rf "$K8S_CACHE.tmp"
	fi
}

up() {
	local src
	src=$(cd "$K8S_FIXTURE_SRC" && pwd)
	trap 'log "up failed"; fixture_logs' ERR
	if running; then
		log "the fixture in $F is already up: reused"
	else
		# The fixture's requirements (README): a second containerd of its own, etcd, the bridge
		# CNI; runc, busybox-static and curl are .ci/run's too.
		local p missing=()
		for p in etcd-server containernetworking-plugins containerd runc busybox-static openssl curl bc; do
			dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
		done
		if [ ${#missing[@]} -gt 0 ]; then
			log "installing ${missing[*]}"
			$SUDO apt-get update -qq >&2
			$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
		fi
		if [ -f "$F/pids/apiserver" ] || [ -f "$F/pids/containerd" ]; then
			log "a fixture that is not up is left in $F: taking it down first"
			$SUDO env K8S_FIXTURE_DIR="$F" bash "$src/down.sh" >&2
		fi
		build
		mkdir -p "$F/bin"
		cp -u "$F/cold/bin/"* "$F/bin/"
		if [ ! -f "$F/images/pause.tar" ] || [ ! -f "$F/images/busybox.tar" ]; then
			env K8S_FIXTURE_DIR="$F" bash "$src/images/build-images.sh" >&2
		fi
		log "bringing the fixture up"
		$SUDO env K8S_FIXTURE_DIR="$F" bash "$src/up.sh" >&2
	fi

	# The sandbox image, named as the pods ask for it, into the fixture's containerd.
	if ! docker image inspect sandboxer-sandbox:latest >/dev/null 2>&1; then
		log "building the sandbox image"
		(cd "$repo" && go run ./cmd/sandboxerd image build) >&2
	fi
	docker tag sandboxer-sandbox:latest "$IMAGE"
	docker save "$IMAGE" | $SUDO ctr -a "$F/containerd/containerd.sock" -n k8s.io images import - >&2
	log "imported $IMAGE"
	# The Debian toolchain image of the "any image" tests (.ci/debian-image.sh), when there is one.
	local debian=""
	if docker image inspect sandboxer-debian:test >/dev/null 2>&1; then
		debian=localhost/sandboxer-debian:test
		docker tag sandboxer-debian:test "$debian"
		docker save "$debian" | $SUDO ctr -a "$F/containerd/containerd.sock" -n k8s.io images import - >&2
		log "imported $debian"
	fi

	kubectl get namespace "$NAMESPACE" >/dev/null 2>&1 || kubectl create namespace "$NAMESPACE" >&2
	# Pods are admitted once the namespace's default service account exists.
	local _
	for _ in $(seq 1 300); do
		kubectl -n "$NAMESPACE" get serviceaccount default >/dev/null 2>&1 && break
		sleep 0.2
	done
	kubectl -n "$NAMESPACE" get serviceaccount default >/dev/null
	trap - ERR
	log "up: namespace $NAMESPACE ready"
	echo "export KUBECONFIG=$KC"
	echo "export SANDBOXER_TEST_K8S_NAMESPACE=$NAMESPACE"
	echo "export SANDBOXER_TEST_K8S_IMAGE=$IMAGE"
	echo "export SANDBOXER_TEST_K8S_PULL=Never"
	# The node's file system (the kubelet's root directory): the disk-fill test watches its free space.
	echo "export SANDBOXER_TEST_K8S_NODE_DIR=$K8S_FIXTURE_DIR/kubelet/root"
	if [ -n "$debian" ]; then echo "export SANDBOXER_TEST_K8S_DEBIAN_IMAGE=$debian"; fi
}

down() {
	local script=$F/down.sh # the copy up.sh laid out; the source's when there is none
	[ -f "$script" ] || script=$K8S_FIXTURE_SRC/down.sh
	$SUDO env K8S_FIXTURE_DIR="$F" bash "$script"
	log "down: $F stopped"
}

case "${1:-}" in
build) build ;;
up) up ;;
down) down ;;
*)
	echo "usage: $0 build|up|down" >&2
	exit 2
	;;
esac
