// Command record writes the first TLS record a client sends, in hex, to a
// file: the corpus of real ClientHellos under agents/ja4/testdata/clienthellos
// was made with it. It listens on 127.0.0.1 and [::1] (so that a client can
// be pointed at https://localhost:PORT/ and send SNI), prints the port,
// takes the first connection that sends a handshake record, writes that
// record and exits. It never answers: the client sees the connection closed.
//
//	go run ./agents/ja4/internal/record -o agents/ja4/testdata/clienthellos/curl.hex &
//	curl -k https://localhost:PORT/
package main

import (
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"time"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
)

func main() {
	out := flag.String("o", "", "file to write the record to, in hex")
	port := flag.Int("p", 0, "port (0: any free port)")
	wait := flag.Duration("wait", 2*time.Minute, "how long to wait for a client")
	flag.Parse()
	if *out == "" {
		log.Fatal("record: -o is required")
	}
	ln4, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatalf("record: %v", err)
	}
	p := ln4.Addr().(*net.TCPAddr).Port
	conns := make(chan net.Conn)
	go accept(ln4, conns)
	if ln6, err := net.Listen("tcp", fmt.Sprintf("[::1]:%d", p)); err == nil {
		go accept(ln6, conns)
	}
	fmt.Println(p)
	deadline := time.After(*wait)
	for {
		select {
		case c := <-conns:
			rec, err := readRecord(c)
			_ = c.Close()
			if err != nil {
				log.Printf("record: skipping a connection: %v", err)
				continue
			}
			h, err := ja4.ParseClientHello(rec)
			if err != nil {
				log.Printf("record: %v", err)
			} else {
				log.Printf("record: %s", h.JA4())
			}
			if err := os.WriteFile(*out, []byte(hex.EncodeToString(rec)+"\n"), 0o644); err != nil {
				log.Fatalf("record: %v", err)
			}
			return
		case <-deadline:
			log.Fatal("record: no client came")
		}
	}
}

func accept(ln net.Listener, conns chan<- net.Conn) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns <- c
	}
}

// readRecord reads one TLS handshake record.
func readRecord(c net.Conn) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	hdr := make([]byte, ja4.RecordHeaderLen)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return nil, fmt.Errorf("reading the record header: %w", err)
	}
	if hdr[0] != 0x16 {
		return nil, fmt.Errorf("not a handshake record (type %d)", hdr[0])
	}
	n := int(binary.BigEndian.Uint16(hdr[3:]))
	if n > ja4.MaxRecordPayload {
		return nil, fmt.Errorf("record length %d too long", n)
	}
	rec := make([]byte, ja4.RecordHeaderLen+n)
	copy(rec, hdr)
	if _, err := io.ReadFull(c, rec[ja4.RecordHeaderLen:]); err != nil {
		return nil, fmt.Errorf("reading the record: %w", err)
	}
	return rec, nil
}
