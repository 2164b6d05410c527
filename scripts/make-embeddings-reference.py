#!/usr/bin/env python3
"""Makes an embedding model's llama.cpp reference (testdata/reference/README.md):

    scripts/make-embeddings-reference.py MODEL.gguf OUT.json POOLING...

runs llama-server (as scripts/build-llama-cpp.sh builds it) once per pooling,
`--embeddings --pooling P -t 1 -c 512 --no-repack -fa off -np 1`, and for each
text takes its /tokenize ids (add_special true) and the /v1/embeddings vector
of those ids (L2-normalised by llama-server), rounded to 6 significant digits.
"""
import json, os, subprocess, sys, time, urllib.request

TEXTS = [
    "The capital of France is Paris.",
    "hello",
    "Naïve café owners in Zürich serve crème brûlée; 東京 is far away!",
    "A longer input, so that attention spans more positions: the quick brown fox jumps over the lazy dog, "
    "and then it runs across the field, through the forest, over the river and back home again before dark.",
    "supercalifragilisticexpialidocious #hashtag e-mail@example.com 3.14159",
]

def call(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)

def main():
    model, out, poolings = sys.argv[1], sys.argv[2], sys.argv[3:]
    bindir = os.path.expanduser("~/.cache/pagoda/llama.cpp-0.3.36/build/bin")
    cases = [{"text": t} for t in TEXTS]
    port = 18392
    for pooling in poolings:
        env = dict(os.environ, LD_LIBRARY_PATH=bindir)
        srv = subprocess.Popen([f"{bindir}/llama-server", "-m", model, "--embeddings", "--pooling", pooling,
                                "-t", "1", "-c", "512", "--no-repack", "-fa", "off", "-np", "1",
                                "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    call(port, "/tokenize", {"content": "x"})
                    break
                except Exception:
                    time.sleep(0.2)
            for c in cases:
                ids = call(port, "/tokenize", {"content": c["text"], "add_special": True})["tokens"]
                assert c.get("ids", ids) == ids
                c["ids"] = ids
                emb = call(port, "/v1/embeddings", {"input": [ids]})["data"][0]["embedding"]
                c[pooling] = [float("%.6g" % v) for v in emb]
        finally:
            srv.terminate()
            srv.wait()
    with open(out, "w") as f:
        json.dump({"model": os.path.basename(model), "cases": cases}, f, separators=(",", ":"))
        f.write("\n")

if __name__ == "__main__":
    main()
