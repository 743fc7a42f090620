#!/usr/bin/env bash
# Installs, with apt-get, what the node tier (test/e2e/rig/node.ts) runs and finds missing: containerd, runc, the CNI
# plugins (bridge, host-local, loopback, portmap in /usr/lib/cni) and iptables. Needs root; does nothing when all are
# there.
set -euo pipefail

missing=()
command -v containerd > /dev/null || missing+=(containerd)
command -v runc > /dev/null || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables > /dev/null || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
fi
