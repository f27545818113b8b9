package apiserver

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
)

var (
	shared    *Server
	sharedErr error
	once      sync.Once
)

// Shared is one server for the whole test binary, built and started on first use; the package's TestMain
// calls Main so that it stops when the tests end. A build or start failure fails the test with its reason.
func Shared(t testing.TB) *Server {
	t.Helper()
	once.Do(func() {
		started := time.Now()
		ctx := context.Background()
		bins, err := Build(ctx, plan.RepoRoot()+"/test")
		if err != nil {
			sharedErr = err
			return
		}
		built := time.Now()
		shared, sharedErr = Start(ctx, bins)
		if sharedErr == nil {
			fmt.Fprintf(os.Stderr, "apiserver: binaries ready in %s, servers ready in %s\n",
				built.Sub(started).Round(100*time.Millisecond), time.Since(built).Round(100*time.Millisecond))
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// Main runs the package's tests and stops the shared server afterwards.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	os.Exit(code)
}
