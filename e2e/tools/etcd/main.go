// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at the version go.mod pins.
// The upstream server module has relative replaces, so it cannot be installed with `go install
// pkg@version`; this main module requires it instead (etcd's own server/main.go does the same).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
