#!/usr/bin/env bash
# Builds the Dockerfile as a user would, with buildah instead of a Docker engine, and tags the image
# localhost/metacontroller-hooks:ci (or $IMAGE), and its build stage $IMAGE-build-stage. Needs root. Installs buildah and debootstrap with apt-get when they
# are missing, and first assembles the base image offline (scripts/build-base-image.sh), since none can be pulled.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/metacontroller-hooks:ci}
started=$SECONDS

missing=()
command -v buildah > /dev/null || missing+=(buildah)
command -v debootstrap > /dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
fi

bash scripts/build-base-image.sh

# The build's npm reads this npmrc, mounted while the build runs only (the image does not keep it): no update notice,
# and where this machine reaches the npm registry through a TLS proxy, npm's `cafile` (the CA that signs for it).
npmrc=$(mktemp)
trap 'rm -f "$npmrc"' EXIT
echo 'update-notifier=false' > "$npmrc"
chmod 0644 "$npmrc"
mounts=(--volume "$npmrc:/usr/local/etc/npmrc:ro")
cafile=$(npm config get cafile 2> /dev/null || true)
if [ -n "$cafile" ] && [ "$cafile" != null ] && [ "$cafile" != undefined ] && [ -f "$cafile" ]; then
  echo 'cafile=/usr/local/etc/npm-ca.crt' >> "$npmrc"
  mounts+=(--volume "$cafile:/usr/local/etc/npm-ca.crt:ro")
fi

# The build stage is tagged as well, so that it is kept as the next run's cache under a name instead of as an
# untagged image, and each run removes the images the previous one tagged and this one replaced (with the layers no
# other image uses): runs leave the image, its build stage and the base, and nothing else.
BUILD_STAGE=$IMAGE-build-stage
previous=$(for name in "$IMAGE" "$BUILD_STAGE"; do buildah images --quiet --no-trunc "$name" 2> /dev/null || true; done)
build () { buildah build --quiet --isolation chroot --pull=never --layers "${mounts[@]}" "$@" . > /dev/null; }
echo "building $IMAGE"
build --target build --tag "$BUILD_STAGE"
build --tag "$IMAGE"
current=$(for name in "$IMAGE" "$BUILD_STAGE"; do buildah images --quiet --no-trunc "$name"; done)
for id in $previous; do
  grep -qx "$id" <<< "$current" || buildah rmi "$id" > /dev/null || echo "could not remove the replaced image $id (still in use?)" >&2
done
echo "image $IMAGE: built in $((SECONDS - started)) s; $(buildah images --format '{{.Size}}' "$IMAGE"), of which the base is $(buildah images --format '{{.Size}}' docker.io/library/node:20-bookworm-slim)"
