// Package plan hands every engine test what the offline plan emits (`npm run plan -- --out DIR`), never a
// hand-made copy of it: the Kubernetes objects of each project and the Pulumi resources around them. It runs
// no upstream code and models none.
package plan
