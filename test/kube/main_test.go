package kube

import (
	"testing"

	"infra-change-platform/test/internal/apiserver"
)

// One API server for the package, stopped when its tests end.
func TestMain(m *testing.M) { apiserver.Main(m) }
