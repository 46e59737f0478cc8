package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/d73a19ff/zoo/pretrain"
)

func main() {
	steps := flag.Int("steps", 300, "")
	prof := flag.String("prof", "/tmp/gpt.prof", "")
	flag.Parse()
	cfg := pretrain.DefaultGPT()
	cfg.MaxIters = *steps
	cfg.EvalEvery = 100000
	cfg.SaveEvery = 0
	cfg.Samples = 0
	cfg.RunDir = fmt.Sprintf("/tmp/zzprof-%d", time.Now().UnixNano())
	f, _ := os.Create(*prof)
	pprof.StartCPUProfile(f)
	t := time.Now()
	_, err := pretrain.RunGPT(context.Background(), cfg, os.Stdout)
	pprof.StopCPUProfile()
	fmt.Println("err", err, time.Since(t))
}
