package apiserver

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { Main(m) }

// A server that cannot start says which one and why, instead of hanging until the test times out.
func TestStartFailureNamesTheServer(t *testing.T) {
	_, err := Start(context.Background(), Binaries{Etcd: "/bin/false", APIServer: "/bin/false"})
	if err == nil || !strings.Contains(err.Error(), "etcd exited before it was ready") {
		t.Fatalf("got %v, want etcd named as exited", err)
	}
}

// The server decides with RBAC only: the administrator may do anything, an unbound ServiceAccount nothing.
func TestServerAuthorizesWithRBAC(t *testing.T) {
	s := Shared(t)
	review := func(user string, groups ...string) bool {
		r, err := s.Clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "default"},
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	if !review("admin", "system:masters") {
		t.Error("system:masters may not read Secrets")
	}
	if review("system:serviceaccount:default:nobody", "system:serviceaccounts", "system:authenticated") {
		t.Error("an unbound ServiceAccount may read Secrets: the server is not authorizing with RBAC")
	}
}
