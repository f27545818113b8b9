package apiserver

import "syscall"

// The servers die with the test binary even when it is killed (a timeout, ^C), so none outlives a run.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
