package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// StartTimeout bounds etcd and kube-apiserver becoming ready (about 20 s on two idle cores).
const StartTimeout = 2 * time.Minute

// Server is a running etcd and kube-apiserver pair on 127.0.0.1, with an administrator's clients.
type Server struct {
	// Config authenticates as a member of system:masters (a static token), the cluster administrator.
	Config    *rest.Config
	Clientset kubernetes.Interface
	Dynamic   dynamic.Interface
	// Mapper reads the server's discovery; Reset it after installing CRDs.
	Mapper *restmapper.DeferredDiscoveryRESTMapper

	dir   string
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when it exits, err then set
	err  error
}

const adminToken = "admin-token-for-tests"

// Start runs etcd and kube-apiserver from bins with RBAC as the only authorizer, a token file for the
// administrator and a generated service-account signing key, on free loopback ports. On failure it stops
// whatever it started and says which server failed and why (the tail of its log).
func Start(ctx context.Context, bins Binaries) (*Server, error) {
	dir, err := os.MkdirTemp("", "apiserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := s.run("etcd", bins.Etcd,
		"--name=test", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster=test="+peer,
		"--unsafe-no-fsync", "--log-level=warn",
	); err != nil {
		return nil, err
	}
	if err := s.waitFor(ctx, "etcd", client+"/health", ""); err != nil {
		return nil, err
	}

	key := filepath.Join(dir, "sa.key")
	if err := writeSigningKey(key); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	secure := fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := s.run("kube-apiserver", bins.APIServer,
		"--etcd-servers="+client,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+key, "--service-account-signing-key-file="+key,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
	); err != nil {
		return nil, err
	}
	if err := s.waitFor(ctx, "kube-apiserver", secure+"/readyz", adminToken); err != nil {
		return nil, err
	}

	s.Config = &rest.Config{
		Host:            secure,
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, // its own self-signed certificate, on loopback
		QPS:             200,
		Burst:           400,
	}
	if s.Clientset, err = kubernetes.NewForConfig(s.Config); err != nil {
		return nil, err
	}
	if s.Dynamic, err = dynamic.NewForConfig(s.Config); err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		return nil, err
	}
	s.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	ok = true
	return s, nil
}

// CAFile is the file holding the certificate kube-apiserver serves (self-signed, with the CA it made for it):
// what a pod finds as its ServiceAccount's ca.crt.
func (s *Server) CAFile() string { return filepath.Join(s.dir, "certs", "apiserver.crt") }

// Stop ends both servers (SIGTERM, then SIGKILL after 10 s) and removes their data.
func (s *Server) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	os.RemoveAll(s.dir)
}

// serverGOGC is the garbage collector's target for kube-apiserver and etcd.
const serverGOGC = "400"

func (s *Server) run(name, binary string, args ...string) error {
	log, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, args...)
	// Not the compiler's memory settings (test/go-harness.ts), but GOGC=400 of their own: at Go's default, a
	// quarter of the CPU the kube tests use is the servers collecting garbage (test/kube, warm: 211 s of CPU at
	// the default, 158 s at 400; kube-apiserver's memory at most 2.0 and 4.0 GB).
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=")
	})
	cmd.Env = append(cmd.Env, "GOGC="+serverGOGC)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("apiserver: starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	s.procs = append(s.procs, p)
	return nil
}

// waitFor polls a health endpoint until it answers 200, the process exits or ctx ends.
func (s *Server) waitFor(ctx context.Context, name, url, token string) error {
	proc := s.procs[len(s.procs)-1]
	httpClient := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback, self-signed
	}
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if resp, err := httpClient.Do(req); err == nil {
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %d %s", url, resp.StatusCode, strings.TrimSpace(body.String()))
		} else {
			last = err.Error()
		}
		select {
		case <-proc.done:
			return fmt.Errorf("apiserver: %s exited before it was ready (%v); its log ends:\n%s", name, proc.err, s.logTail(name))
		case <-ctx.Done():
			return fmt.Errorf("apiserver: %s not ready after %s (last answer: %s); its log ends:\n%s", name, StartTimeout, last, s.logTail(name))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *Server) logTail(name string) string {
	raw, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("apiserver: no free loopback port"), err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeSigningKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
}
