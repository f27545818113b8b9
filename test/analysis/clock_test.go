package analysis

import (
	"flag"
	"os"
	"testing"
	"time"

	timeutil "github.com/argoproj/argo-rollouts/utils/time"
	log "github.com/sirupsen/logrus"
)

// speed is how much faster than real time the analysis controller's clock runs: every emitted interval,
// initial delay and count stays as it is, and a 45-minute verification takes about three seconds. Argo
// Rollouts reads the time only through utils/time (its own controller tests set it the same way).
const speed = 1000

func TestMain(m *testing.M) {
	origin := time.Now()
	timeutil.SetNowTimeFunc(func() time.Time { return origin.Add(time.Since(origin) * speed) })
	log.SetLevel(log.ErrorLevel)
	// The scenarios mostly wait (on the clock, or on a timeout): run them all at once unless -parallel says.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "64")
	}
	os.Exit(m.Run())
}
