package controlplane

import (
	"context"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestStartCreateStop(t *testing.T) {
	cp, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	v, err := cp.Client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.37.1" {
		t.Fatalf("server version = %v, %v; want v1.37.1", v, err)
	}
	n, err := CreateNode(t.Context(), cp.Client, st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{"cpu": "2"}).Obj())
	if err != nil {
		t.Fatal(err)
	}
	if n.Status.Allocatable.Cpu().String() != "2" || len(n.Spec.Taints) != 0 {
		t.Errorf("node = allocatable %v taints %v; want cpu 2 and no taints", n.Status.Allocatable, n.Spec.Taints)
	}
	p, err := CreatePod(t.Context(), cp.Client, st.MakePod().Name("p").Node("n1").Phase(v1.PodRunning).Obj())
	if err != nil || p.Status.Phase != v1.PodRunning {
		t.Fatalf("pod = %v, %v", p, err)
	}
	if _, err := os.Stat(cp.KubeconfigPath); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := cp.Dir
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Stop", dir)
	}
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", u.Host); err == nil {
		conn.Close()
		t.Errorf("the API server still listens on %s after Stop", u.Host)
	}
}

func TestKillAndRestartAPIServerKeepsDataAndCredentials(t *testing.T) {
	cp, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	if _, err := CreateNode(t.Context(), cp.Client, st.MakeNode().Name("kept").Obj()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cp.EtcdEndpoint(), "http://127.0.0.1:") {
		t.Errorf("EtcdEndpoint() = %q, want a loopback http URL", cp.EtcdEndpoint())
	}
	if err := cp.RestartAPIServer(t.Context()); err == nil {
		t.Error("RestartAPIServer of a running API server succeeded")
	}
	for i, stop := range []func(context.Context) error{cp.KillAPIServer, cp.StopAPIServer} {
		if err := stop(t.Context()); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
		if conn, err := net.Dial("tcp", cp.APIServerAddress()); err == nil {
			conn.Close()
			t.Fatalf("stop %d: the API server still listens on %s", i, cp.APIServerAddress())
		}
		if err := cp.RestartAPIServer(t.Context()); err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		// The same client (same address, same certificates) reads the
		// data written before.
		if _, err := cp.Client.CoreV1().Nodes().Get(t.Context(), "kept", metav1.GetOptions{}); err != nil {
			t.Fatalf("after restart %d: %v", i, err)
		}
	}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", cp.APIServerAddress()); err == nil {
		conn.Close()
		t.Errorf("the restarted API server still listens on %s after Stop", cp.APIServerAddress())
	}
}
