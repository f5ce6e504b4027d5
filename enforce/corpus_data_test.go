package enforce

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"sort"
	"testing"
)

// corpusArchive holds the real robots.txt corpus: 400 files from Scrapy
// Protego's test data, as fetched from the named sites in July 2019 and
// copied unchanged (testdata/corpus/SOURCE.md and NOTICE say where from).
// It is a gzipped tar so that the repository stays small.
const corpusArchive = "testdata/robots-corpus.tar.gz"

// corpusFile is one robots.txt of the corpus; name is its file name,
// "<host>.txt".
type corpusFile struct {
	name string
	body []byte
}

// readCorpus returns the files of the corpus, sorted by name.
func readCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	f, err := os.Open(corpusArchive)
	if err != nil {
		tb.Fatalf("robots corpus: %v", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("robots corpus %s: %v", corpusArchive, err)
	}
	tr := tar.NewReader(z)
	var files []corpusFile
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatalf("robots corpus %s: %v", corpusArchive, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			tb.Fatalf("robots corpus %s, %s: %v", corpusArchive, h.Name, err)
		}
		files = append(files, corpusFile{h.Name, body})
	}
	if len(files) == 0 {
		tb.Fatalf("robots corpus %s holds no files", corpusArchive)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files
}
