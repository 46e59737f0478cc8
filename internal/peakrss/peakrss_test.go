package peakrss

import (
	"runtime"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"Name:\tx\nVmPeak:\t  200000 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 100 kB\n", 12345 * 1024 / 1e6, true},
		{"VmHWM:\t1000000 kB\n", 1024, true},
		{"VmRSS:\t100 kB\n", 0, false},
		{"VmHWM:\t100 MB\n", 0, false},
		{"VmHWM:\tx kB\n", 0, false},
	} {
		got, ok := parse([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parse(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// On Linux the peak covers at least a slice just touched.
func TestMB(t *testing.T) {
	mb, ok := MB()
	if runtime.GOOS != "linux" {
		if ok {
			t.Logf("peak RSS %.1f MB on %s", mb, runtime.GOOS)
		}
		return
	}
	if !ok {
		t.Fatal("no VmHWM in /proc/self/status")
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1
	}
	after, _ := MB()
	if after < mb || after < 64*1.048576 {
		t.Errorf("peak RSS %.1f MB, then %.1f MB after touching 64 MiB", mb, after)
	}
	runtime.KeepAlive(buf)
}
