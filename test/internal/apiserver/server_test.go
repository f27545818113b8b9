package apiserver

import (
	"context"
	"strings"
	"testing"
)

// A server that cannot start says which one and why, instead of hanging until the test times out. (A
// server that starts is exercised by test/kube, which shares one per package.)
func TestStartFailureNamesTheServer(t *testing.T) {
	_, err := Start(context.Background(), Binaries{Etcd: "/bin/false", APIServer: "/bin/false"})
	if err == nil || !strings.Contains(err.Error(), "etcd exited before it was ready") {
		t.Fatalf("got %v, want etcd named as exited", err)
	}
}
