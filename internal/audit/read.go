package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// maxLine is the longest log line kept; longer lines are counted as
// unreadable (their start and end are dropped together).
const maxLine = 4 << 20

// LogFile is an access log opened for reading, plain or gzip-compressed
// (told by its first two bytes, 1f 8b, not by its name).
type LogFile struct {
	Name string
	Size int64 // bytes on disk; -1 when unknown
	Gzip bool
	read atomic.Int64 // bytes read from disk so far
	f    *os.File
	r    io.Reader
}

// Open opens the access log at path; "-" is the standard input.
func Open(path string) (*LogFile, error) {
	lf := &LogFile{Name: path, Size: -1}
	if path == "-" {
		lf.f = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("opening access log: %w", err)
		}
		lf.f = f
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			lf.Size = st.Size()
		}
	}
	br := bufio.NewReaderSize(countReader{lf.f, &lf.read}, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		lf.Close()
		return nil, fmt.Errorf("reading access log %s: %w", path, err)
	}
	lf.r = br
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			lf.Close()
			return nil, fmt.Errorf("reading gzip access log %s: %w", path, err)
		}
		lf.r, lf.Gzip = zr, true
	}
	return lf, nil
}

// Read reads the (decompressed) log.
func (lf *LogFile) Read(p []byte) (int, error) { return lf.r.Read(p) }

// Done returns the bytes read from disk so far, for progress.
func (lf *LogFile) Done() int64 { return lf.read.Load() }

// Close closes the file (not the standard input).
func (lf *LogFile) Close() error {
	if lf.f == nil || lf.f == os.Stdin {
		return nil
	}
	return lf.f.Close()
}

type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Feed reads the log named name (for messages) from r, line by line, into
// the Auditor. tick, when not nil, is called every 16384 lines (for a
// progress display). It stops at the first error: reading the log, or one
// Line returns, which names the log and the line.
func (a *Auditor) Feed(name string, r io.Reader, tick func()) error {
	a.log, a.lineNo = name, 0
	br := bufio.NewReaderSize(r, 256<<10)
	var long []byte
	tooLong := false
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(line) <= maxLine {
				long = append(long, line...)
			} else {
				tooLong = true
			}
			continue
		}
		raw, hadLong := line, len(long) > 0 || tooLong
		if hadLong {
			if tooLong || len(long)+len(line) > maxLine {
				a.bad++
				line = nil
			} else {
				long = append(long, line...)
				line = long
			}
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			if lerr := a.Line(line); lerr != nil {
				return fmt.Errorf("%s:%d: %w", name, a.lineNo, lerr)
			}
		} else if len(raw) > 0 || hadLong {
			a.lineNo++ // an empty line, or one too long to read
		}
		long, tooLong = long[:0], false
		if n++; n&16383 == 0 && tick != nil {
			tick()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading access log %s: %w", name, err)
		}
	}
}
