//go:build !linux

package apiserver

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
