// Command etcd is a plain build of the upstream etcd server, used only as a
// test dependency (envtest control plane). See hack/build-control-plane.sh.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
