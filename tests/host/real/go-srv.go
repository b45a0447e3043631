// real-daemons.test: a Go HTTP server (the Go runtime's own threads,
// signals, epoll and timers, no libc). It writes its port to the file named
// by its argument; each answer gives the hits so far, the ticks of a
// goroutine that counts every 10 ms, and an entry of a map of 100,000.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

func main() {
	var hits, ticks int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	data := make(map[int]string)
	for i := 0; i < 100000; i++ {
		data[i] = fmt.Sprint("v", i)
	}
	go func() {
		for range time.Tick(10 * time.Millisecond) {
			atomic.AddInt64(&ticks, 1)
		}
	}()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		n := atomic.AddInt64(&hits, 1)
		fmt.Fprintf(w, "hits=%d ticks=%d v77777=%s\n", n, atomic.LoadInt64(&ticks), data[77777])
	})
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(os.Args[1]+".tmp", []byte(port), 0o644); err != nil {
		panic(err)
	}
	if err := os.Rename(os.Args[1]+".tmp", os.Args[1]); err != nil {
		panic(err)
	}
	panic(http.Serve(ln, nil))
}
