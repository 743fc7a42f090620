// Wrapper module that builds Metacontroller from the Go module proxy (see scripts/build-e2e-binaries.sh).
//
// Metacontroller's go.mod says `module metacontroller` while its tags (v2+ without /vN) are invalid for
// github.com/metacontroller/metacontroller, so it is required under its own path and replaced by a
// github.com/metacontroller/metacontroller version.
//
// PIN: the intended pin is v4.17.2 = v1.5.21-0.20260813213314-76b818bdc67b, but the module proxy reachable
// here answers "403 This module version is not available" for it and for every version but v1.5.20
// (2021-07-13), whose go.mod/zip it serves while the checksum database has no entry (go.sum below was
// written with GONOSUMDB=github.com/metacontroller/metacontroller; it is now what verifies the zip).
// To move to v4.17.2 once the proxy serves it: set the replace below to
// v1.5.21-0.20260813213314-76b818bdc67b, the marker lines to v4.17.2 and metacontroller/pkg/cmd/metacontroller,
// replace the second block by the replaces of metacontroller's go.mod at that tag, drop the reflect2 line,
// and run `go mod tidy`.
//
// Read by scripts/build-e2e-binaries.sh:
// e2e-rig: metacontroller-version=v1.5.20
// e2e-rig: metacontroller-main=metacontroller
module e2erig/metacontroller

go 1.26.0

require metacontroller v0.0.0-00010101000000-000000000000

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.1.1 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/evanphx/json-patch v4.11.0+incompatible // indirect
	github.com/fsnotify/fsnotify v1.4.9 // indirect
	github.com/go-logr/logr v0.4.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/groupcache v0.0.0-20200121045136-8c9f03a8e57e // indirect
	github.com/golang/protobuf v1.5.2 // indirect
	github.com/google/go-cmp v0.5.6 // indirect
	github.com/google/gofuzz v1.1.0 // indirect
	github.com/google/uuid v1.1.2 // indirect
	github.com/googleapis/gnostic v0.5.5 // indirect
	github.com/hashicorp/golang-lru v0.5.4 // indirect
	github.com/imdario/mergo v0.3.12 // indirect
	github.com/json-iterator/go v1.1.11 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.2-0.20181231171920-c182affec369 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/prometheus/client_golang v1.11.0 // indirect
	github.com/prometheus/client_model v0.2.0 // indirect
	github.com/prometheus/common v0.26.0 // indirect
	github.com/prometheus/procfs v0.6.0 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	golang.org/x/net v0.0.0-20210428140749-89ef3d95e781 // indirect
	golang.org/x/oauth2 v0.0.0-20200107190931-bf48bf16ab8d // indirect
	golang.org/x/sys v0.0.0-20210603081109-ebe580a85c40 // indirect
	golang.org/x/term v0.0.0-20210220032956-6a3ed077a48d // indirect
	golang.org/x/text v0.3.6 // indirect
	golang.org/x/time v0.0.0-20210611083556-38a9dc6acbc6 // indirect
	gomodules.xyz/jsonpatch/v2 v2.2.0 // indirect
	google.golang.org/appengine v1.6.7 // indirect
	google.golang.org/protobuf v1.26.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.0-20210107192922-496545a6307b // indirect
	k8s.io/api v0.21.2 // indirect
	k8s.io/apiextensions-apiserver v0.21.2 // indirect
	k8s.io/apimachinery v0.21.2 // indirect
	k8s.io/client-go v0.21.2 // indirect
	k8s.io/component-base v0.21.2 // indirect
	k8s.io/klog/v2 v2.9.0 // indirect
	k8s.io/kube-openapi v0.0.0-20210305001622-591a79e4bda7 // indirect
	k8s.io/utils v0.0.0-20210527160623-6fdb442a123b // indirect
	sigs.k8s.io/controller-runtime v0.9.2 // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.1.0 // indirect
	sigs.k8s.io/yaml v1.2.0 // indirect
)

// json-iterator's reflect2 v1.0.1 (what k8s.io 0.21 pulls in) crashes with Go >= 1.18; v1.0.2 is the fix.
require github.com/modern-go/reflect2 v1.0.2 // indirect

replace metacontroller => github.com/metacontroller/metacontroller v1.5.20

// Copied from metacontroller's own go.mod at v1.5.20 (replace directives are ignored in dependencies).
replace (
	k8s.io/apimachinery => k8s.io/apimachinery v0.21.2
	k8s.io/client-go => k8s.io/client-go v0.21.2
	k8s.io/component-base => k8s.io/component-base v0.21.2
)
