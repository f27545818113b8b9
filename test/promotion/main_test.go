package promotion

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if mainRepo != nil {
		os.RemoveAll(filepath.Dir(mainRepo.Dir))
	}
	os.Exit(code)
}
