#!/usr/bin/env bash
# Builds the Dockerfile as a user would, with buildah instead of a Docker engine, and tags the image
# localhost/metacontroller-hooks:ci (or $IMAGE). Needs root. Installs buildah and debootstrap with apt-get when they
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

echo "building $IMAGE"
buildah build --quiet --isolation chroot --pull=never --layers "${mounts[@]}" --tag "$IMAGE" . > /dev/null
echo "image $IMAGE: built in $((SECONDS - started)) s; $(buildah images --format '{{.Size}}' "$IMAGE"), of which the base is $(buildah images --format '{{.Size}}' docker.io/library/node:20-bookworm-slim)"
