// Package admissioncost measures what the Stacks' admission policies (lib/pipeline/admission.ts) cost the
// API server's CEL at the largest pipeline the validation allows (test/kube/largest.ts prints it), with the
// API server's own compiler and evaluator: k8s.io/apiserver v0.34.3 pkg/admission/plugin/cel, composed as
// pkg/admission/plugin/policy/validating/plugin.go compilePolicy composes a policy. It runs no server and
// models nothing: the cost is the API server's own accounting.
package admissioncost
