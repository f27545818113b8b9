package analysis

import (
	"flag"
	"os"
	"testing"
	"time"

	timeutil "github.com/argoproj/argo-rollouts/utils/time"
	log "github.com/sirupsen/logrus"
)

func TestMain(m *testing.M) {
	origin := time.Now()
	timeutil.SetNowTimeFunc(func() time.Time { return origin.Add(time.Since(origin) * speed) })
	log.SetLevel(log.ErrorLevel)
	// The scenarios mostly wait (on the clock, or on a timeout; the longest, 27 s of an update's 45 minutes):
	// run all at once unless -parallel says. Each Job's node waits too, most of its time between looks.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "32")
	}
	os.Exit(m.Run())
}
