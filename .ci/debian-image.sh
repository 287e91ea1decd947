#!/usr/bin/env bash
# Builds the Debian toolchain image the "any image" tests and the real-work benchmarks run (issue
# 35): a debootstrap minbase root file system with python3 (and its test suite), gcc, make,
# SQLite's headers, git and Debian's Go, plus this machine's own Go toolchain at /usr/local/go
# (the benchmarks compare with it on the host), imported into the Docker daemon as $IMAGE. No
# registry: the packages come from the machine's Debian mirror (its apt sources). The root file
# system is kept under $CACHE, so a machine that keeps it builds it once; the import is skipped
# when the image already has that root file system's stamp.
set -euo pipefail
IMAGE=${IMAGE:-sandboxer-debian:test}
CACHE=${CACHE:-/var/cache/sandboxer-ci}
ROOT=$CACHE/debian-root
PACKAGES=python3,libpython3.11-testsuite,gcc,libc6-dev,make,libsqlite3-dev,git,golang-go,ca-certificates
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
MIRROR=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | sed -n 's/^URIs: *//p; s/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\) .*/\2/p' | grep -v security | head -1 || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

if [ "$(sed -n 2p "$ROOT/.sandboxer-done" 2>/dev/null)" != "$PACKAGES" ]; then
	command -v debootstrap >/dev/null || apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	rm -rf "$ROOT"
	mkdir -p "$CACHE"
	echo "debian-image: debootstrap $SUITE from $MIRROR ($PACKAGES)" >&2
	debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
		{ tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
	rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/*
	printf '%s\n%s\n' "$(date -u +%FT%TZ)" "$PACKAGES" >"$ROOT/.sandboxer-done"
fi
# This machine's Go, as the host runs it.
goroot=$(go env GOROOT 2>/dev/null || true)
if [ -n "$goroot" ] && [ "$(cat "$ROOT/usr/local/go/VERSION" 2>/dev/null)" != "$(cat "$goroot/VERSION" 2>/dev/null)" ]; then
	rm -rf "$ROOT/usr/local/go"
	cp -a "$goroot" "$ROOT/usr/local/go"
fi
stamp="$(sed -n 1p "$ROOT/.sandboxer-done") $(head -1 "$ROOT/usr/local/go/VERSION" 2>/dev/null)"
if [ "$(docker image inspect -f '{{index .Config.Labels "org.sandboxer.test-root"}}' "$IMAGE" 2>/dev/null)" = "$stamp" ]; then
	echo "debian-image: $IMAGE is up to date" >&2
	exit 0
fi
echo "debian-image: importing $IMAGE" >&2
tar -C "$ROOT" --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* --exclude=./.sandboxer-done -c . |
	docker import -c "LABEL org.sandboxer.test-root=\"$stamp\"" \
		-c 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/go/bin LANG=C.UTF-8' \
		-c 'CMD ["/bin/bash"]' - "$IMAGE" >/dev/null
echo "debian-image: $IMAGE imported" >&2
