// Wrapper module that fetches the Prometheus Operator's CRDs (example/prometheus-operator-crd/ of
// github.com/prometheus-operator/prometheus-operator) through the Go module proxy, for the e2e suite's
// server-side dry run of manifests/monitoring (see scripts/build-e2e-binaries.sh). Nothing is built from it.
//
// PIN: v0.85.0 is the newest version the module proxy reachable here serves (later ones answer
// "403 This module version is not available"); PodMonitor and PrometheusRule are monitoring.coreos.com/v1 in all.
module e2erig/prometheusoperator

go 1.24.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
