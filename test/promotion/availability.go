package promotion

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// Where Freight may go next, as Kargo v1.11.2 decides it: which Stage each Stage takes Freight from
// (spec.requestedFreight), which Freight a Stage has verified, and the control-flow Stages (joins) that verify
// Freight without a Promotion once it is available to them. Kargo's API module, where Stage.IsFreightAvailable
// lives, cannot be built here: these few functions follow it line by line.

// FreightSources is kargoapi.FreightSources as the plan emits it (akuity/kargo v1.11.2
// api/v1alpha1/stage_types.go); a field the model does not follow (requiredSoakTime, autoPromotionOptions)
// is refused when decoded rather than ignored.
type FreightSources struct {
	Direct               bool     `json:"direct,omitempty"`
	Stages               []string `json:"stages,omitempty"`
	AvailabilityStrategy string   `json:"availabilityStrategy,omitempty"`
}

// FreightRequest is kargoapi.FreightRequest: Freight of one origin, from its sources.
type FreightRequest struct {
	Origin  FreightOrigin  `json:"origin"`
	Sources FreightSources `json:"sources"`
}

// StageNode is one Stage of the plan as availability reads it.
type StageNode struct {
	Name      string
	Requested []FreightRequest
	// ControlFlow is Stage.IsControlFlow (api/v1alpha1/stage_types.go): no promotionTemplate steps.
	ControlFlow bool
}

// Pipeline is the project's Stages, in plan order.
type Pipeline struct {
	Stages []*StageNode
	byName map[string]*StageNode
}

// NewPipeline reads every Stage of the kargo plan.
func NewPipeline(kargo *plan.Project) (*Pipeline, error) {
	p := &Pipeline{byName: map[string]*StageNode{}}
	for _, s := range kargo.OfKind("Stage") {
		n := &StageNode{Name: s.GetName()}
		steps, _, _ := unstructured.NestedSlice(s.Object, "spec", "promotionTemplate", "spec", "steps")
		n.ControlFlow = len(steps) == 0
		requested, _, _ := unstructured.NestedSlice(s.Object, "spec", "requestedFreight")
		for _, r := range requested {
			var req FreightRequest
			if err := decodeStrict(r, &req); err != nil {
				return nil, fmt.Errorf("Stage %q requestedFreight: %w", n.Name, err)
			}
			switch req.Sources.AvailabilityStrategy {
			case "", "OneOf", "All":
			default:
				// pkg/api/warehouse.go ListFreightFromWarehouse: "unsupported AvailabilityStrategy".
				return nil, fmt.Errorf("Stage %q: unsupported AvailabilityStrategy %q", n.Name, req.Sources.AvailabilityStrategy)
			}
			n.Requested = append(n.Requested, req)
		}
		if len(n.Requested) == 0 {
			return nil, fmt.Errorf("Stage %q requests no Freight", n.Name)
		}
		p.Stages = append(p.Stages, n)
		p.byName[n.Name] = n
	}
	for _, n := range p.Stages {
		for _, up := range n.Upstream() {
			if p.byName[up] == nil {
				return nil, fmt.Errorf("Stage %q takes Freight from %q, which is no Stage of the project", n.Name, up)
			}
		}
	}
	return p, nil
}

// Stage is the named Stage, nil if there is none.
func (p *Pipeline) Stage(name string) *StageNode { return p.byName[name] }

// Upstream is every Stage the Stage takes Freight from.
func (n *StageNode) Upstream() []string {
	var out []string
	for _, r := range n.Requested {
		for _, s := range r.Sources.Stages {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// Ancestors is every Stage Freight passes through before this one, nearest first.
func (p *Pipeline) Ancestors(stage string) []string {
	var out []string
	queue := slices.Clone(p.byName[stage].Upstream())
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if slices.Contains(out, s) {
			continue
		}
		out = append(out, s)
		queue = append(queue, p.byName[s].Upstream()...)
	}
	return out
}

// Downstream is every Stage that takes Freight from this one.
func (p *Pipeline) Downstream(stage string) []string {
	var out []string
	for _, n := range p.Stages {
		if slices.Contains(n.Upstream(), stage) {
			out = append(out, n.Name)
		}
	}
	return out
}

// FreightStatus is the part of kargoapi.FreightStatus availability reads (api/v1alpha1/freight_types.go):
// the Stages the Freight was verified in and approved for.
type FreightStatus struct {
	VerifiedIn  map[string]bool
	ApprovedFor map[string]bool
}

// Verifications is what the API server holds about some Freight as the pipeline moves it: each one's
// status, kept as Kargo's controllers keep it.
type Verifications struct {
	Pipeline *Pipeline
	freight  map[string]*Freight
	status   map[string]*FreightStatus
}

func (p *Pipeline) NewVerifications(freight ...*Freight) *Verifications {
	v := &Verifications{Pipeline: p, freight: map[string]*Freight{}, status: map[string]*FreightStatus{}}
	for _, f := range freight {
		v.freight[f.Name] = f
		v.status[f.Name] = &FreightStatus{VerifiedIn: map[string]bool{}, ApprovedFor: map[string]bool{}}
	}
	return v
}

func (v *Verifications) lookup(freight, stage string) (*Freight, *StageNode, error) {
	f, s := v.freight[freight], v.Pipeline.Stage(stage)
	if f == nil {
		return nil, nil, fmt.Errorf("freights.kargo.akuity.io %q not found", freight)
	}
	if s == nil {
		return nil, nil, fmt.Errorf("stages.kargo.akuity.io %q not found", stage)
	}
	return f, s, nil
}

// Available is Stage.IsFreightAvailable (akuity/kargo v1.11.2 api/v1alpha1/stage_types.go): for a request
// of the Freight's origin, the Freight is approved for the Stage, or the request takes it directly from its
// Warehouse, or it is verified in every upstream Stage (availabilityStrategy All) or in one of them (OneOf,
// the default). No request of the plan sets requiredSoakTime (NewPipeline refuses one), so every
// verification has soaked long enough.
func (v *Verifications) Available(freight, stage string) bool {
	f, s, err := v.lookup(freight, stage)
	if err != nil {
		return false
	}
	status := v.status[f.Name]
	for _, req := range s.Requested {
		if req.Origin != f.Origin {
			continue
		}
		if status.ApprovedFor[s.Name] || req.Sources.Direct {
			return true
		}
		if req.Sources.AvailabilityStrategy == "All" {
			for _, up := range req.Sources.Stages {
				if !status.VerifiedIn[up] {
					return false
				}
			}
			return true
		}
		for _, up := range req.Sources.Stages {
			if status.VerifiedIn[up] {
				return true
			}
		}
	}
	return false
}

// Promotable is what Kargo's Promotion webhook admits (pkg/webhook/kubernetes/promotion/webhook.go,
// ValidateCreate: "Freight is not available to this Stage"); a control-flow Stage is never promoted into
// (pkg/server/promote_downstream_v1alpha1.go skips it: it has no steps to run).
func (v *Verifications) Promotable(freight, stage string) error {
	_, s, err := v.lookup(freight, stage)
	if err != nil {
		return err
	}
	if s.ControlFlow {
		return fmt.Errorf("Stage %q is a control-flow Stage: no Promotion runs there", stage)
	}
	if !v.Available(freight, stage) {
		return fmt.Errorf("Freight %q is not available to Stage %q", freight, stage)
	}
	return nil
}

// Verified records that a regular Stage, promoted to the Freight, verified it: its AnalysisRun (or, for a
// Stage without verification, the promotion itself) succeeded, and the regular Stage reconciler marked the
// Freight verified in the Stage (pkg/controller/stages/regular_stages.go, markFreightVerifiedForStage). Then
// the control-flow Stages reconcile.
func (v *Verifications) Verified(freight, stage string) error {
	if err := v.Promotable(freight, stage); err != nil && !v.status[freight].VerifiedIn[stage] {
		return fmt.Errorf("verified without a promotion: %w", err)
	}
	v.status[freight].VerifiedIn[stage] = true
	v.reconcileControlFlow()
	return nil
}

// Approve is `kargo approve`: the Freight is approved for the Stage (FreightStatus.ApprovedFor).
func (v *Verifications) Approve(freight, stage string) error {
	if _, _, err := v.lookup(freight, stage); err != nil {
		return err
	}
	v.status[freight].ApprovedFor[stage] = true
	v.reconcileControlFlow()
	return nil
}

// VerifiedIn is Freight.IsVerifiedIn.
func (v *Verifications) VerifiedIn(freight, stage string) bool {
	s := v.status[freight]
	return s != nil && s.VerifiedIn[stage]
}

// reconcileControlFlow is the control-flow Stage reconciler (akuity/kargo v1.11.2
// pkg/controller/stages/control_flow_stages.go, reconcile and markFreightVerifiedForStage): each Freight
// available to a control-flow Stage (pkg/api/stage.go ListFreightAvailableToStage) is marked verified in it,
// with no Promotion and no AnalysisRun. Repeated until nothing changes, for a join downstream of a join.
func (v *Verifications) reconcileControlFlow() {
	for changed := true; changed; {
		changed = false
		for _, s := range v.Pipeline.Stages {
			if !s.ControlFlow {
				continue
			}
			for name, status := range v.status {
				if !status.VerifiedIn[s.Name] && v.Available(name, s.Name) {
					status.VerifiedIn[s.Name] = true
					changed = true
				}
			}
		}
	}
}

// Order is the stages sorted so that each comes after every one of them it takes Freight from, directly
// or through Stages not listed; ties keep plan order.
func (p *Pipeline) Order(stages []string) []string {
	var out []string
	left := slices.Clone(stages)
	for len(left) > 0 {
		next := -1
		for i, s := range left {
			ready := true
			for _, a := range p.Ancestors(s) {
				ready = ready && !slices.Contains(left, a)
			}
			if ready && (next < 0 || p.index(s) < p.index(left[next])) {
				next = i
			}
		}
		if next < 0 {
			return append(out, left...) // a cycle, which Kargo refuses; left as it is
		}
		out = append(out, left[next])
		left = slices.Delete(left, next, next+1)
	}
	return out
}

func (p *Pipeline) index(stage string) int {
	return slices.IndexFunc(p.Stages, func(n *StageNode) bool { return n.Name == stage })
}
