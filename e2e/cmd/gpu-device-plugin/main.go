// Command gpu-device-plugin advertises GPUs that are not there, through the kubelet's device
// plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1), as NVIDIA's device plugin advertises
// real ones: the kubelet counts them in the node's capacity, the scheduler places GPU pods by
// them, and each container that requests some is allocated devices, which it sees as
// NVIDIA_VISIBLE_DEVICES. So the node runs GPU pods the way a GPU node does, without a GPU.
// The same binary advertises the other device resources GPU pods ask for: an RDMA resource
// (rdma/hca_shared_devices_a, as k8s-rdma-shared-dev-plugin names them), and replicated GPUs
// served as NVIDIA's plugin serves them through MPS, which mounts the MPS daemon's shared tmpfs
// at the container's /dev/shm (--shm-mount: a host directory standing in for it).
//
//	gpu-device-plugin [--kubelet-dir /var/lib/kubelet/device-plugins] [--devices 8] [--resource nvidia.com/gpu]
//	                  [--shm-mount HOSTDIR]
//
// It registers again whenever the kubelet restarts (its socket is made anew).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices  []*pluginapi.Device
	shmMount string // a host directory mounted at each allocated container's /dev/shm; "" none
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once, all healthy, and keeps the stream open: they never change.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// Allocate tells the runtime which devices each container got, as NVIDIA's plugin does with its
// default strategy (an environment variable the container toolkit reads), and with --shm-mount
// mounts the directory at /dev/shm as its MPS strategy mounts the daemon's tmpfs
// (k8s-device-plugin internal/plugin/mps.go).
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	res := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		r := &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIds, ",")},
		}
		if p.shmMount != "" {
			r.Mounts = []*pluginapi.Mount{{ContainerPath: "/dev/shm", HostPath: p.shmMount}}
		}
		res.ContainerResponses = append(res.ContainerResponses, r)
	}
	return res, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func main() {
	dir := flag.String("kubelet-dir", pluginapi.DevicePluginPath, "the kubelet's device plugin directory")
	n := flag.Int("devices", 8, "how many GPUs to advertise")
	resource := flag.String("resource", "nvidia.com/gpu", "the extended resource name")
	shm := flag.String("shm-mount", "", "a host directory to mount at each allocated container's /dev/shm")
	flag.Parse()
	p := &plugin{shmMount: *shm}
	for i := 0; i < *n; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("GPU-%d", i), Health: pluginapi.Healthy})
	}
	// One socket per resource, so that several of these plugins serve one kubelet.
	endpoint := "shmguard-e2e-" + strings.NewReplacer("/", "_", ".", "_").Replace(*resource) + ".sock"
	kubeletSocket := filepath.Join(*dir, filepath.Base(pluginapi.KubeletSocket))
	for {
		if err := serve(p, *dir, endpoint, kubeletSocket, *resource); err != nil {
			log.Printf("gpu-device-plugin: %v; registering again in 1s", err)
		}
		time.Sleep(time.Second)
	}
}

// serve listens on the plugin's socket, registers with the kubelet, and returns when the kubelet
// restarts (its socket is replaced) or serving fails.
func serve(p *plugin, dir, endpoint, kubeletSocket, resource string) error {
	sock := filepath.Join(dir, endpoint)
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	defer srv.Stop()

	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resource,
		Options: &pluginapi.DevicePluginOptions{},
	})
	cancel()
	conn.Close()
	if err != nil {
		return fmt.Errorf("registering with %s: %w", kubeletSocket, err)
	}
	log.Printf("gpu-device-plugin: registered %d %s with the kubelet", len(p.devices), resource)
	registered, err := os.Stat(kubeletSocket)
	if err != nil {
		return err
	}
	for {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Second):
		}
		// The kubelet removes every socket in its directory when it starts: register again.
		if now, err := os.Stat(kubeletSocket); err != nil || !os.SameFile(now, registered) {
			return fmt.Errorf("the kubelet restarted")
		}
		if _, err := os.Stat(sock); err != nil {
			return fmt.Errorf("the plugin's socket was removed")
		}
	}
}
