// Package argoevents runs Argo Events v1.9.10's dependency filter and trigger parameter resolution over the
// EventSource and Sensor the kargo plan renders, and Kubernetes Events shaped as Kargo v1.11.2 records them.
package argoevents
