// Command control-plane starts, describes and stops the loopback control plane of package
// controlplane; scripts/control-plane.sh builds its parts and calls it.
//
//	control-plane up   --dir DIR --bin DIR --shmguard FILE --chart DIR [--crds DIR]
//	                   [--node --images DIR --gpu-plugin FILE]
//	control-plane env  --dir DIR
//	control-plane down --dir DIR
//	control-plane forward --netns PATH --ports P,P,...   (up starts it with a node)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"shmguard.io/e2e/controlplane"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	verb := os.Args[1]
	fs := flag.NewFlagSet(verb, flag.ExitOnError)
	dir := fs.String("dir", "", "the state directory")
	o := controlplane.Options{}
	fs.StringVar(&o.BinDir, "bin", "", "the directory of etcd, kube-apiserver, kube-controller-manager, kubectl and helm")
	fs.StringVar(&o.Shmguard, "shmguard", "", "the shmguard binary (shmguard-webhook and shmguard-agent beside it)")
	fs.StringVar(&o.Chart, "chart", "", "charts/shmguard")
	fs.StringVar(&o.CRDDir, "crds", "", "the upstream CRDs")
	fs.BoolVar(&o.Node, "node", false, "add a node, and install shmguard on it with helm")
	fs.StringVar(&o.ImagesDir, "images", "", "with --node: the images scripts/build-images.sh built")
	fs.StringVar(&o.GPUPlugin, "gpu-plugin", "", "with --node: the GPU device plugin's binary")
	netns := fs.String("netns", "", "forward: the network namespace to forward into")
	ports := fs.String("ports", "", "forward: the loopback ports to forward")
	_ = fs.Parse(os.Args[2:])
	if verb == "forward" {
		var list []int
		for _, p := range strings.Split(*ports, ",") {
			n, err := strconv.Atoi(p)
			if err != nil {
				usage()
			}
			list = append(list, n)
		}
		if err := controlplane.Forward(*netns, list); err != nil {
			fmt.Fprintf(os.Stderr, "control-plane forward: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *dir == "" {
		usage()
	}
	o.Dir = *dir
	switch verb {
	case "up":
		if o.BinDir == "" || o.Shmguard == "" || o.Chart == "" || (o.Node && (o.ImagesDir == "" || o.GPUPlugin == "")) {
			usage()
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		o.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "control-plane: "+format+"\n", args...) }
		start := time.Now()
		s, err := controlplane.Up(ctx, o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "control-plane up: %v\n", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "control-plane: up in %.1fs: kube-apiserver %s at %s, shmguard at %s\n",
			time.Since(start).Seconds(), s.KubeVersion, s.APIServerURL(), s.WebhookURL(""))
		fmt.Print(s.Env())
	case "env":
		s, err := controlplane.Load(o.Dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "control-plane env: %v\n", err)
			os.Exit(1)
		}
		fmt.Print(s.Env())
	case "down":
		if err := controlplane.Down(o.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "control-plane down: %v\n", err)
			os.Exit(1)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: control-plane up|env|down --dir DIR [--bin DIR --shmguard FILE --chart DIR --crds DIR [--node --images DIR --gpu-plugin FILE]]")
	os.Exit(2)
}
