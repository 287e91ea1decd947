#!/bin/sh
# Regenerates this directory's copy of mvdan.cc/sh's interpreter packages: the pristine release
# from the Go module cache, plus every patch of patches/ in order, with the import paths of the
# copied packages pointed here. The syntax package stays the upstream module's.
#
#   third_party/mvdansh/update.sh          # rewrite the copy
#   third_party/mvdansh/update.sh -check   # fail when the copy differs from release + patches
set -eu
VERSION=v3.14.1
HERE=$(cd "$(dirname "$0")" && pwd)
MODULE=github.com/sandboxer/sandboxer/third_party/mvdansh
SRC=$(cd "$HERE" && go mod download -json "mvdan.cc/sh/v3@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/src"
cp -R "$SRC/." "$WORK/src/"
chmod -R u+w "$WORK/src"
for p in "$HERE"/patches/*.patch; do
	[ -e "$p" ] || continue
	(cd "$WORK/src" && patch -s -p1 <"$p")
done
mkdir "$WORK/out"
for pkg in interp expand pattern internal; do
	mkdir "$WORK/out/$pkg"
	for f in "$WORK/src/$pkg"/*.go; do
		case $f in *_test.go) continue ;; esac
		[ "$pkg/$(basename "$f")" = internal/testing.go ] && continue
		sed -E -e "s#\"mvdan.cc/sh/v3/(interp|expand|pattern|internal)\"#\"$MODULE/\1\"#" "$f" >"$WORK/out/$pkg/$(basename "$f")"
	done
done
if [ "${1-}" = -check ]; then
	for pkg in interp expand pattern internal; do
		diff -r "$WORK/out/$pkg" "$HERE/$pkg" || { echo "third_party/mvdansh/$pkg differs from $VERSION + patches" >&2; exit 1; }
	done
	exit 0
fi
for pkg in interp expand pattern internal; do
	rm -rf "${HERE:?}/$pkg"
	cp -R "$WORK/out/$pkg" "$HERE/$pkg"
done
gofmt -l "$HERE" >/dev/null
