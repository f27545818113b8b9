package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// restrictedNamespace is a namespace the API server's Pod Security admission holds to `restricted`, with the
// ServiceAccounts the pods name: the ServiceAccount admission looks each pod's account up, and no
// controller-manager creates even `default` here.
func restrictedNamespace(t *testing.T, in *installation, name string, accounts ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := in.server.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range append(accounts, "default") {
		if _, err := in.server.Clientset.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: a}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
