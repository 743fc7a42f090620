#!/usr/bin/env bash
# Builds the binaries of the e2e control-plane rig (test/e2e/rig/cluster.ts) from Go modules
# fetched through the Go module proxy, using the wrapper modules in test/e2e/rig/{kube,etcd,metacontroller}:
#
#   .cache/e2e-bin/kube-apiserver, kube-controller-manager, kubectl   (k8s.io/kubernetes, see KUBE_VERSION)
#   .cache/e2e-bin/kubelet, kube-scheduler, kube-proxy                (the same module, for the node tier)
#   .cache/e2e-bin/etcd                                               (go.etcd.io/etcd/server/v3, see ETCD_VERSION)
#   .cache/e2e-bin/metacontroller + metacontroller-crds-v1.yaml       (see test/e2e/rig/metacontroller/go.mod)
#   .cache/e2e-bin/prometheus, promtool                               (github.com/prometheus/prometheus, see PROMETHEUS_VERSION)
#   .cache/e2e-bin/prometheus-operator-crds/*.yaml                    (see test/e2e/rig/prometheus-operator/go.mod)
#
# Idempotent: each binary has a stamp file (<bin>.stamp) holding the pin, the wrapper's go.mod/go.sum hash,
# the Go version and the build flags; a binary whose stamp matches is skipped. Run it again after changing a pin.
#
# Environment:
#   E2E_BIN_DIR   output directory (default: <repo>/.cache/e2e-bin)
#   E2E_BUILD_P   go build -p (default 2)
#   E2E_FORCE=1   rebuild everything
#   E2E_ONLY      space-separated subset of: kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler
#                 kube-proxy etcd metacontroller prometheus promtool prometheus-operator-crds (`npm run test:rules`
#                 builds promtool alone)
#   E2E_METACONTROLLER  another Metacontroller binary for the suite to run (test/e2e/rig/metacontroller.ts): when set,
#                 Metacontroller is not built here
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RIG="$ROOT/test/e2e/rig"
BIN=${E2E_BIN_DIR:-$ROOT/.cache/e2e-bin}
P=${E2E_BUILD_P:-2}
ALL="kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler kube-proxy etcd prometheus promtool prometheus-operator-crds"
[[ -n "${E2E_METACONTROLLER:-}" ]] || ALL+=" metacontroller"
ONLY=${E2E_ONLY:-$ALL}

KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
PROMETHEUS_VERSION=v0.316.0

export GOTOOLCHAIN=local CGO_ENABLED=0
# Never let a stray GOFLAGS (e.g. -mod=mod) rewrite the committed go.mod/go.sum; no VCS stamping of the wrappers.
export GOFLAGS="-mod=readonly -buildvcs=false"

command -v go >/dev/null || { echo "build-e2e-binaries: 'go' not found in PATH" >&2; exit 1; }
GO_VERSION=$(go env GOVERSION)
mkdir -p "$BIN"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
log() { printf '[build-e2e-binaries] %s\n' "$*"; }
status() { if [[ $1 == 0 ]]; then echo done; else echo "FAILED (exit $1)"; fi; }

# run_step NAME CMD...: runs CMD, prints its wall time (and peak RSS of the largest process when GNU time exists).
run_step() {
  local name=$1; shift
  local t0 rss_file rc=0
  t0=$(now)
  log "$name: start"
  if [[ -x /usr/bin/time ]]; then
    rss_file=$(mktemp)
    /usr/bin/time -o "$rss_file" -f '%M' "$@" || rc=$?
    log "$name: $(status "$rc") in $(elapsed "$t0") s wall, peak RSS $(( $(tail -n1 "$rss_file" 2>/dev/null || echo 0) / 1024 )) MiB"
    rm -f "$rss_file"
  else
    "$@" || rc=$?
    log "$name: $(status "$rc") in $(elapsed "$t0") s wall"
  fi
  return "$rc"
}

want() { [[ " $ONLY " == *" $1 "* ]]; }

# stamp_of WRAPPER_DIR PIN EXTRA...: the string that identifies one build.
stamp_of() {
  local dir=$1; shift
  printf '%s\n' "$@" "go=$GO_VERSION" "mod=$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -c1-16)"
}

# up_to_date NAME STAMP: true when .cache/e2e-bin/NAME exists and its stamp matches.
up_to_date() {
  [[ "${E2E_FORCE:-0}" != 1 && -x "$BIN/$1" && -f "$BIN/$1.stamp" ]] && [[ "$(cat "$BIN/$1.stamp")" == "$2" ]]
}

# build NAME WRAPPER_DIR PKG STAMP LDFLAGS [TAGS]: go build into a temp name, then rename (no half-written binary).
build() {
  local name=$1 dir=$2 pkg=$3 stamp=$4 ldflags=$5 tags=${6:-}
  if up_to_date "$name" "$stamp"; then
    log "$name: up to date ($(head -n1 "$BIN/$name.stamp")), skipped"
    return 0
  fi
  local tmp="$BIN/.$name.tmp.$$"
  (cd "$dir" && run_step "$name" nice -n 10 go build -p "$P" -trimpath ${tags:+-tags="$tags"} -ldflags="$ldflags" -o "$tmp" "$pkg")
  mv -f "$tmp" "$BIN/$name"
  printf '%s\n' "$stamp" > "$BIN/$name.stamp"
}

# download WRAPPER_DIR TAGS PKG...: fetch (and verify against go.sum) the modules those packages need, and no others;
# a step of its own so that cold CI runs show where the time goes.
download() {
  local dir=$1 tags=$2; shift 2
  (cd "$dir" && run_step "download modules ($(basename "$dir"))" \
    bash -c '"$@" >/dev/null' - go list -deps ${tags:+-tags="$tags"} "$@")
}

T_ALL=$(now)
log "go: $GO_VERSION, GOMODCACHE=$(go env GOMODCACHE), GOCACHE=$(go env GOCACHE), -p $P, output $BIN"

# --- Kubernetes: the control plane (kube-apiserver, kube-controller-manager, kubectl) and the node -------------------
KUBE_DIR="$RIG/kube"
KUBE_MINOR=$(echo "$KUBE_VERSION" | cut -d. -f2)
# Mirrors kubernetes hack/lib/version.sh (both version packages) and hack/lib/golang.sh (tags, -s -w, -trimpath).
KUBE_LDFLAGS="-s -w"
for pkgv in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  KUBE_LDFLAGS+=" -X $pkgv.gitVersion=$KUBE_VERSION -X $pkgv.gitMajor=1 -X $pkgv.gitMinor=$KUBE_MINOR"
  KUBE_LDFLAGS+=" -X $pkgv.gitTreeState=clean -X $pkgv.gitCommit=module-$KUBE_VERSION"
done
KUBE_TAGS=selinux,notest,grpcnotrace
KUBE_BINARIES="kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler kube-proxy"
KUBE_STAMP=$(stamp_of "$KUBE_DIR" "k8s.io/kubernetes $KUBE_VERSION" "tags=$KUBE_TAGS" "ldflags=$KUBE_LDFLAGS")
kube_needed=()
for b in $KUBE_BINARIES; do
  want "$b" && ! up_to_date "$b" "$KUBE_STAMP" && kube_needed+=("$b")
done
if ((${#kube_needed[@]})); then
  download "$KUBE_DIR" "$KUBE_TAGS" "${kube_needed[@]/#/k8s.io/kubernetes/cmd/}"
fi
for b in $KUBE_BINARIES; do
  want "$b" && build "$b" "$KUBE_DIR" "k8s.io/kubernetes/cmd/$b" "$KUBE_STAMP" "$KUBE_LDFLAGS" "$KUBE_TAGS"
done

# --- etcd -------------------------------------------------------------------------------------------------------
ETCD_DIR="$RIG/etcd"
ETCD_LDFLAGS="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$ETCD_VERSION"
ETCD_STAMP=$(stamp_of "$ETCD_DIR" "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "ldflags=$ETCD_LDFLAGS")
if want etcd; then
  up_to_date etcd "$ETCD_STAMP" || download "$ETCD_DIR" "" go.etcd.io/etcd/server/v3
  build etcd "$ETCD_DIR" go.etcd.io/etcd/server/v3 "$ETCD_STAMP" "$ETCD_LDFLAGS"
fi

# --- Metacontroller ----------------------------------------------------------------------------------------------
if want metacontroller; then
  MC_DIR="$RIG/metacontroller"
  # The module is required as `metacontroller` and replaced by a github.com/metacontroller/metacontroller version;
  # the pin is whatever that replace says (go.mod is the single source of truth).
  MC_MODVER=$(sed -n 's|^replace metacontroller => github.com/metacontroller/metacontroller \(v[^ ]*\).*|\1|p' "$MC_DIR/go.mod")
  MC_VERSION=$(sed -n 's|^// e2e-rig: metacontroller-version=\(v[^ ]*\).*|\1|p' "$MC_DIR/go.mod")
  MC_PKG=$(sed -n 's|^// e2e-rig: metacontroller-main=\([^ ]*\).*|\1|p' "$MC_DIR/go.mod")
  [[ -n "$MC_MODVER" && -n "$MC_VERSION" && -n "$MC_PKG" ]] || {
    echo "build-e2e-binaries: cannot read the metacontroller pin from $MC_DIR/go.mod" >&2; exit 1; }
  MC_LDFLAGS="-s -w -X main.version=$MC_VERSION"
  MC_STAMP=$(stamp_of "$MC_DIR" "metacontroller $MC_VERSION ($MC_MODVER)" "pkg=$MC_PKG" "ldflags=$MC_LDFLAGS")
  if ! up_to_date metacontroller "$MC_STAMP" || [[ ! -f "$BIN/metacontroller-crds-v1.yaml" ]]; then
    download "$MC_DIR" "" "$MC_PKG"
    build metacontroller "$MC_DIR" "$MC_PKG" "$MC_STAMP" "$MC_LDFLAGS"
    MC_SRC=$(cd "$MC_DIR" && go list -m -f '{{with .Replace}}{{.Dir}}{{end}}' metacontroller)
    [[ -f "$MC_SRC/manifests/production/metacontroller-crds-v1.yaml" ]] || {
      echo "build-e2e-binaries: $MC_SRC/manifests/production/metacontroller-crds-v1.yaml not found" >&2; exit 1; }
    install -m 0644 "$MC_SRC/manifests/production/metacontroller-crds-v1.yaml" "$BIN/metacontroller-crds-v1.yaml"
    log "metacontroller-crds-v1.yaml: copied from $MC_SRC"
  else
    log "metacontroller: up to date ($(head -n1 "$BIN/metacontroller.stamp")), skipped"
  fi
fi

# --- Prometheus and promtool --------------------------------------------------------------------------------------
PROM_DIR="$RIG/prometheus"
# remove_all_sd: no service discovery but static and file targets, which is all the suite uses; a third of the
# build. The version the binaries print is the module's.
PROM_TAGS=remove_all_sd
PROM_LDFLAGS="-s -w -X github.com/prometheus/common/version.Version=module-$PROMETHEUS_VERSION"
PROM_STAMP=$(stamp_of "$PROM_DIR" "github.com/prometheus/prometheus $PROMETHEUS_VERSION" "tags=$PROM_TAGS" "ldflags=$PROM_LDFLAGS")
prom_needed=()
for b in prometheus promtool; do
  want "$b" && ! up_to_date "$b" "$PROM_STAMP" && prom_needed+=("$b")
done
if ((${#prom_needed[@]})); then
  download "$PROM_DIR" "$PROM_TAGS" "${prom_needed[@]/#/github.com/prometheus/prometheus/cmd/}"
fi
for b in prometheus promtool; do
  want "$b" && build "$b" "$PROM_DIR" "github.com/prometheus/prometheus/cmd/$b" "$PROM_STAMP" "$PROM_LDFLAGS" "$PROM_TAGS"
done

# --- The Prometheus Operator's CRDs (for the dry run of manifests/monitoring) -------------------------------------
if want prometheus-operator-crds; then
  PO_DIR="$RIG/prometheus-operator"
  PO_OUT="$BIN/prometheus-operator-crds"
  PO_STAMP=$(stamp_of "$PO_DIR" "prometheus-operator-crds")
  if [[ "${E2E_FORCE:-0}" != 1 && -f "$PO_OUT.stamp" && "$(cat "$PO_OUT.stamp")" == "$PO_STAMP" ]]; then
    log "prometheus-operator-crds: up to date, skipped"
  else
    # The module's zip, checked against the wrapper's go.sum; only the CRDs the component uses are kept.
    PO_SRC=$(cd "$PO_DIR" && go mod download github.com/prometheus-operator/prometheus-operator &&
      go list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator)
    [[ -d "$PO_SRC/example/prometheus-operator-crd" ]] || {
      echo "build-e2e-binaries: no example/prometheus-operator-crd in $PO_SRC" >&2; exit 1; }
    mkdir -p "$PO_OUT"
    for kind in podmonitors prometheusrules servicemonitors; do
      install -m 0644 "$PO_SRC/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$PO_OUT/"
    done
    printf '%s\n' "$PO_STAMP" > "$PO_OUT.stamp"
    log "prometheus-operator-crds: copied from $PO_SRC"
  fi
fi

log "all done in $(elapsed "$T_ALL") s; binaries in $BIN:"
(cd "$BIN" && ls -l --block-size=M $KUBE_BINARIES etcd metacontroller prometheus promtool 2>/dev/null || true)
