package testmodel

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"testing"
)

// SHA256 returns the hex SHA-256 of the file at path (a synthesized model
// checked against the one its reference was made from).
func SHA256(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
