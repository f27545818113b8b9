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
	// The scenarios mostly wait (on the clock, or on a timeout): run several at once unless -parallel says,
	// not so many that the Jobs' node processes starve each other past their (sped-up) deadlines.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
