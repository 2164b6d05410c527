#!/usr/bin/env python3
"""Golden vectors from ggml's CPU backend and glibc's libm, for the kernels'
bit-exact tests (kernels/golden_test.go).

    pip install llama-cpp-python==0.3.36   # built on the AVX-512 machine
    python3 kernels/testdata/ggml/make_golden.py kernels/testdata/ggml [GROUP...]

It calls the functions llama.cpp itself runs (libggml-cpu of llama-cpp-python,
glibc 2.36's libm) on seeded random inputs. Files are little-endian records:
  dot_f16/dot_bf16.bin  n u32, x[n] u16, y[n] u16, ggml_vec_dot_*(x, y) f32
  dot_f32.bin           n u32, x[n] f32, y[n] f32, ggml_vec_dot_f32 f32
  softmax.bin           n u32, x[n] f32, ggml_vec_soft_max_f32 y[n] f32, sum f64
  silu.bin              n u32, x[n], g[n], silu(x)[n], swiglu(x, g)[n] (f32)
  q8_0/q8_1/q8_K.bin    n u32, x[n] f32, ggml's quantized blocks
  vec_dot_<type>.bin    n u32, weight row quantized by ggml, x[n] f32, vec_dot f32
  dequant_<type>.bin    n u32, weight row quantized by ggml, dequantize_row_<type> [n] f32
  fp16.bin              n u32, x[n] f32, ggml_cpu_fp32_to_fp16(x)[n] u16
  sincosf.bin           n u32, x[n] f32, (sinf, cosf)[n] f32
  expf.bin              n u32, x[n] f32, expf(x)[n] f32
  powf.bin              records of base, exponent, powf f32
  vec_dot_mxfp4.bin, dequant_mxfp4.bin  as vec_dot_<type>/dequant_<type>, group
                        mxfp4 (its own random stream: the other files stay as made)
  repack_mxfp4.bin      as repack_q4_0.bin, MXFP4 rows: ggml_gemv/gemm_mxfp4_8x8_q8_0
                        (group mxfp4)
  ../../../gguf/testdata/mxfp4.bin  n u32, x[n] f32, quantize_row_mxfp4_ref(x),
                        dequantize_row_mxfp4 of it [n] f32 (group mxfp4)
  repack_q4_0.bin       rows, n, tokens u32, Q4_0 weight rows quantized by ggml,
                        x[tokens][n] f32, then ggml_gemv_q4_0_8x8_q8_0 (token by
                        token) and ggml_gemm_q4_0_8x8_q8_0 (four at a time) outputs
                        [tokens][rows] f32: llama.cpp's repacked (CPU_REPACK) path
"""
import ctypes, os, struct, sys
import numpy as np
import llama_cpp

lib = os.environ.get("LLAMA_CPP_LIB_PATH") or os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
ctypes.CDLL(os.path.join(lib, "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
g = ctypes.CDLL(os.path.join(lib, "libggml-cpu.so"))
g.ggml_cpu_init()  # fills ggml's F16 conversion tables
base = ctypes.CDLL(os.path.join(lib, "libggml-base.so"))
m = ctypes.CDLL("libm.so.6")
P = ctypes.c_void_p
F = ctypes.c_float
for name in ("ggml_vec_dot_f16", "ggml_vec_dot_f32", "ggml_vec_dot_bf16"):
    getattr(g, name).argtypes = [ctypes.c_int, P, ctypes.c_size_t, P, ctypes.c_size_t, P, ctypes.c_size_t, ctypes.c_int]
g.ggml_vec_soft_max_f32.argtypes = [ctypes.c_int, P, P, F]
g.ggml_vec_soft_max_f32.restype = ctypes.c_double
g.ggml_vec_silu_f32.argtypes = [ctypes.c_int, P, P]
g.ggml_vec_swiglu_f32.argtypes = [ctypes.c_int, P, P, P]
for name in ("quantize_row_q8_0", "quantize_row_q8_1", "quantize_row_q8_K"):
    getattr(g, name).argtypes = [P, P, ctypes.c_int64]
g.ggml_cpu_fp32_to_fp16.argtypes = [P, P, ctypes.c_int64]
m.sincosf.argtypes = [F, ctypes.POINTER(F), ctypes.POINTER(F)]
m.powf.argtypes = [F, F]; m.powf.restype = F
m.expf.argtypes = [F]; m.expf.restype = F

rng = np.random.default_rng(20240601)
ptr = lambda a: a.ctypes.data_as(P)


def f16(n, scale):
    return (rng.standard_normal(n) * scale).astype(np.float16)


def write(out, name, recs):
    with open(os.path.join(out, name), "wb") as f:
        for r in recs:
            f.write(r)


def bf16(x):
    """Round float32 to bfloat16 bits, nearest even (ggml's conversion)."""
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def dots(out):
    lens = list(range(1, 18)) + [31, 32, 33, 63, 64, 65, 127, 128, 129, 192, 256, 300, 576]
    r16, r32, rb = [], [], []
    for n in lens:
        for scale in (1.0, 30.0):
            x, y = f16(n, scale), f16(n, 1.0)
            s = np.zeros(1, np.float32)
            g.ggml_vec_dot_f16(n, ptr(s), 0, ptr(x), 0, ptr(y), 0, 1)
            r16.append(struct.pack("<I", n) + x.tobytes() + y.tobytes() + s.tobytes())
            x32 = (rng.standard_normal(n) * scale).astype(np.float32)
            y32 = rng.standard_normal(n).astype(np.float32)
            g.ggml_vec_dot_f32(n, ptr(s), 0, ptr(x32), 0, ptr(y32), 0, 1)
            r32.append(struct.pack("<I", n) + x32.tobytes() + y32.tobytes() + s.tobytes())
            xb, yb = bf16(x32), bf16(y32)
            g.ggml_vec_dot_bf16(n, ptr(s), 0, ptr(xb), 0, ptr(yb), 0, 1)
            rb.append(struct.pack("<I", n) + xb.tobytes() + yb.tobytes() + s.tobytes())
    write(out, "dot_f16.bin", r16)
    write(out, "dot_f32.bin", r32)
    write(out, "dot_bf16.bin", rb)


def softmax(out):
    recs = []
    for n in [1, 5, 16, 17, 31, 32, 64, 100, 256]:
        for scale in (0.5, 5.0, 40.0):
            x = (rng.standard_normal(n) * scale).astype(np.float32)
            k = rng.integers(0, n + 1)
            x[k:] = -np.inf if k > 0 else x[k:]
            y = np.zeros(n, np.float32)
            s = g.ggml_vec_soft_max_f32(n, ptr(y), ptr(x), F(float(x.max())))
            recs.append(struct.pack("<I", n) + x.tobytes() + y.tobytes() + struct.pack("<d", s))
    write(out, "softmax.bin", recs)


def silu(out):
    recs = []
    for n in [1, 7, 16, 33, 64, 200]:
        for scale in (1.0, 8.0, 60.0):
            x = (rng.standard_normal(n) * scale).astype(np.float32)
            gt = (rng.standard_normal(n) * scale).astype(np.float32)
            y1 = np.zeros(n, np.float32)
            y2 = np.zeros(n, np.float32)
            g.ggml_vec_silu_f32(n, ptr(y1), ptr(x))
            g.ggml_vec_swiglu_f32(n, ptr(y2), ptr(x), ptr(gt))
            recs.append(struct.pack("<I", n) + x.tobytes() + gt.tobytes() + y1.tobytes() + y2.tobytes())
    write(out, "silu.bin", recs)


def quant(out):
    recs = {"q8_0": [], "q8_1": [], "q8_K": []}
    bsz = {"q8_0": 34, "q8_1": 36, "q8_K": 292}
    for n in [256, 512]:
        for scale in (0.01, 1.0, 3e4):
            x = (rng.standard_normal(n) * scale).astype(np.float32)
            x[rng.integers(0, n, 3)] *= 50
            x[:7] = np.round(x[:7])  # exact ties after scaling are likely with integers
            for t in recs:
                nb = n // (256 if t == "q8_K" else 32)
                y = np.zeros(nb * bsz[t], np.uint8)
                getattr(g, "quantize_row_" + t)(ptr(x), ptr(y), n)
                recs[t].append(struct.pack("<I", n) + x.tobytes() + y.tobytes())
    for t, r in recs.items():
        write(out, t + ".bin", r)


QTYPES = {  # name: (block elements, block bytes, vec_dot activation type)
    "q4_0": (32, 18, "q8_0"), "q4_1": (32, 20, "q8_1"), "q5_0": (32, 22, "q8_0"),
    "q5_1": (32, 24, "q8_1"), "q8_0": (32, 34, "q8_0"), "q2_K": (256, 84, "q8_K"),
    "q3_K": (256, 110, "q8_K"), "q4_K": (256, 144, "q8_K"), "q5_K": (256, 176, "q8_K"),
    "q6_K": (256, 210, "q8_K"),
}
ABYTES = {"q8_0": 34, "q8_1": 36, "q8_K": 292}


def qdots(out):
    """Weight rows quantized by ggml, activations quantized by ggml, and
    ggml's vec_dot of the two: record = n, weight bytes, x[n], dot."""
    for t, (bl, bs, at) in QTYPES.items():
        getattr(g, "quantize_row_" + t).argtypes = [P, P, ctypes.c_int64]
        vd = getattr(g, "ggml_vec_dot_%s_%s" % (t, at))
        vd.argtypes = [ctypes.c_int, P, ctypes.c_size_t, P, ctypes.c_size_t, P, ctypes.c_size_t, ctypes.c_int]
        dq = getattr(base, "dequantize_row_" + t)
        dq.argtypes = [P, P, ctypes.c_int64]
        recs, drecs = [], []
        for n in ([256, 576] if bl == 32 else [256, 512]):
            for scale in (0.02, 1.0, 300.0):
                w = (rng.standard_normal(n) * 0.05).astype(np.float32)
                x = (rng.standard_normal(n) * scale).astype(np.float32)
                x[rng.integers(0, n, 2)] *= 40
                wq = np.zeros(n // bl * bs, np.uint8)
                getattr(g, "quantize_row_" + t)(ptr(w), ptr(wq), n)
                xq = np.zeros(n // (256 if at == "q8_K" else 32) * ABYTES[at], np.uint8)
                getattr(g, "quantize_row_" + at)(ptr(x), ptr(xq), n)
                s = np.zeros(1, np.float32)
                vd(n, ptr(s), 0, ptr(wq), 0, ptr(xq), 0, 1)
                recs.append(struct.pack("<I", n) + wq.tobytes() + x.tobytes() + s.tobytes())
                deq = np.zeros(n, np.float32)
                dq(ptr(wq), ptr(deq), n)
                drecs.append(struct.pack("<I", n) + wq.tobytes() + deq.tobytes())
        write(out, "vec_dot_%s.bin" % t, recs)
        write(out, "dequant_%s.bin" % t, drecs)


def f16conv(out):
    x = np.concatenate([(rng.standard_normal(400) * s).astype(np.float32) for s in (1e-6, 1e-3, 1, 1e3, 6e4)])
    x = np.concatenate([x, np.array([65504, 65520, 65519.99, -1e9, 5.96e-8, 2.98e-8, 2.99e-8], np.float32)])
    y = np.zeros(len(x), np.uint16)
    g.ggml_cpu_fp32_to_fp16(ptr(x), ptr(y), len(x))
    write(out, "fp16.bin", [struct.pack("<I", len(x)) + x.tobytes() + y.tobytes()])


def libm(out):
    # sincosf on the angles of RoPE caches (positions 0..4095, common bases
    # and dimensions) and on random arguments; powf on RoPE theta scales.
    xs = []
    for base in (10000.0, 100000.0):
        for dims in (64, 128):
            ts = np.float32(m.powf(F(base), F(-2.0 / dims)))
            for p in range(0, 8192, 331):
                th = np.float32(p)
                for i in range(dims // 2):
                    xs.append(th)
                    th = np.float32(th * ts)
    xs = np.array(xs, np.float32)
    xs = np.concatenate([xs, rng.uniform(-300, 300, 2000).astype(np.float32),
                         rng.uniform(-1e6, 1e6, 500).astype(np.float32),
                         (rng.standard_normal(500) * 1e-2).astype(np.float32)])
    s, c = F(), F()
    sc = np.zeros((len(xs), 2), np.float32)
    for k, v in enumerate(xs):
        m.sincosf(F(v), ctypes.byref(s), ctypes.byref(c))
        sc[k] = (s.value, c.value)
    write(out, "sincosf.bin", [struct.pack("<I", len(xs)) + xs.tobytes() + sc.tobytes()])
    pw = []
    for base in (10000, 100000, 500000, 1000000, 10000000, 1e4 * 1.5, 75000, 8000, 160000, 5e6):
        for dims in range(8, 257, 8):
            pw.append(struct.pack("<fff", base, -2.0 / dims, m.powf(F(base), F(-2.0 / dims))))
    write(out, "powf.bin", pw)
    e = np.concatenate([rng.uniform(-104, 0, 4000), rng.uniform(-1, 1, 1000), rng.uniform(0, 89, 500),
                        [-np.inf, np.inf, 88.7, 88.73, -103.9, -104.0, 0.0]]).astype(np.float32)
    ev = np.array([m.expf(F(v)) for v in e], np.float32)
    write(out, "expf.bin", [struct.pack("<I", len(e)) + e.tobytes() + ev.tobytes()])


def repacked(out):
    """llama.cpp's repacked Q4_0 path: the weights interleaved as
    make_block_q4_0x8 does (8 rows, 8-byte chunks, nibbles xor 0x88), the
    activations quantized by quantize_row_q8_0 (gemv) and by the 4-row
    ggml_quantize_mat_t<8, Q8_0> (gemm). Its own generator keeps the other
    files' streams unchanged."""
    r = np.random.default_rng(20261124)
    g.quantize_row_q4_0.argtypes = [P, P, ctypes.c_int64]
    qmat = getattr(g, "_Z19ggml_quantize_mat_tILl8EL9ggml_type8EEvPKfPvll")
    qmat.argtypes = [P, P, ctypes.c_int64, ctypes.c_int64]
    sig = [ctypes.c_int, P, ctypes.c_size_t, P, P, ctypes.c_int, ctypes.c_int]
    g.ggml_gemv_q4_0_8x8_q8_0.argtypes = sig
    g.ggml_gemm_q4_0_8x8_q8_0.argtypes = sig
    recs = []
    for rows, n, nt, scale in [(8, 64, 4, 1.0), (16, 256, 8, 0.02), (24, 256, 4, 300.0),
                               (48, 2048, 8, 1.0), (40, 576, 4, 3e4)]:
        nb = n // 32
        w = (r.standard_normal(rows * n) * 0.05).astype(np.float32)
        x = (r.standard_normal(nt * n) * scale).astype(np.float32)
        x[r.integers(0, nt * n, 4)] *= 40
        wq = np.zeros(rows * nb * 18, np.uint8)
        for i in range(rows):
            g.quantize_row_q4_0(ptr(w[i * n:]), ptr(wq[i * nb * 18:]), n)
        blocks = wq.reshape(rows, nb, 18)
        rp = np.zeros((rows // 8, nb, 144), np.uint8)
        for gi in range(rows // 8):
            for b in range(nb):
                for i in range(8):
                    rp[gi, b, 2 * i:2 * i + 2] = blocks[8 * gi + i, b, :2]
                for i in range(16):
                    src = blocks[8 * gi + i % 8, b, 2 + (i // 8) * 8:2 + (i // 8) * 8 + 8]
                    rp[gi, b, 16 + 8 * i:24 + 8 * i] = src ^ 0x88
        gv = np.zeros((nt, rows), np.float32)
        for t in range(nt):
            xq = np.zeros(nb * 34, np.uint8)
            g.quantize_row_q8_0(ptr(x[t * n:]), ptr(xq), n)
            g.ggml_gemv_q4_0_8x8_q8_0(n, ptr(gv[t]), rows, ptr(rp), ptr(xq), 1, rows)
        gm = np.zeros((nt, rows), np.float32)
        xq4 = np.zeros(nt // 4 * nb * 136, np.uint8)
        for t in range(0, nt, 4):
            qmat(ptr(x[t * n:]), ptr(xq4[t // 4 * nb * 136:]), 4, n)
        g.ggml_gemm_q4_0_8x8_q8_0(n, ptr(gm), rows, ptr(rp), ptr(xq4), nt, rows)
        recs.append(struct.pack("<III", rows, n, nt) + wq.tobytes() + x.tobytes() + gv.tobytes() + gm.tobytes())
    write(out, "repack_q4_0.bin", recs)


def mxfp4(out):
    """MXFP4 (gpt-oss's experts): ggml's reference quantizer and dequantizer
    on random rows and edge cases (zero blocks, powers of two and values
    just below them, ties between codes), and ggml_vec_dot_mxfp4_q8_0 with
    odd and even block counts (its AVX2 loop takes blocks in pairs)."""
    r = np.random.default_rng(20261127)
    base.quantize_row_mxfp4_ref.argtypes = [P, P, ctypes.c_int64]
    base.dequantize_row_mxfp4.argtypes = [P, P, ctypes.c_int64]
    g.quantize_row_q8_0.argtypes = [P, P, ctypes.c_int64]
    vd = g.ggml_vec_dot_mxfp4_q8_0
    vd.argtypes = [ctypes.c_int, P, ctypes.c_size_t, P, ctypes.c_size_t, P, ctypes.c_size_t, ctypes.c_int]

    def q(x):
        wq = np.zeros(len(x) // 32 * 17, np.uint8)
        base.quantize_row_mxfp4_ref(ptr(x), ptr(wq), len(x))
        deq = np.zeros(len(x), np.float32)
        base.dequantize_row_mxfp4(ptr(wq), ptr(deq), len(x))
        return wq, deq

    qrecs = []
    edge = np.zeros(32 * 6, np.float32)
    edge[32:64] = np.array([2.0 ** k for k in range(-8, 8)] * 2, np.float32)
    edge[64:96] = np.nextafter(edge[32:64], np.float32(0))
    edge[96:128] = np.array([0.25 * k for k in range(-16, 16)], np.float32)  # ties at d = 0.5
    edge[128:160] = np.array([1e-30, -3e-38, 6e4, -1e9] * 8, np.float32)
    edge[160:192] = np.linspace(-7, 7, 32, dtype=np.float32)
    for x in [edge] + [(r.standard_normal(n) * s).astype(np.float32) for n in (64, 256, 1024) for s in (0.02, 1.0, 300.0)]:
        wq, deq = q(x)
        qrecs.append(struct.pack("<I", len(x)) + x.tobytes() + wq.tobytes() + deq.tobytes())
    write(os.path.join(out, "../../../gguf/testdata"), "mxfp4.bin", qrecs)
    recs, drecs = [], []
    for n in (96, 256, 576, 2880):
        for scale in (0.02, 1.0, 300.0):
            w = (r.standard_normal(n) * 0.05).astype(np.float32)
            x = (r.standard_normal(n) * scale).astype(np.float32)
            x[r.integers(0, n, 2)] *= 40
            wq, deq = q(w)
            xq = np.zeros(n // 32 * 34, np.uint8)
            g.quantize_row_q8_0(ptr(x), ptr(xq), n)
            s = np.zeros(1, np.float32)
            vd(n, ptr(s), 0, ptr(wq), 0, ptr(xq), 0, 1)
            recs.append(struct.pack("<I", n) + wq.tobytes() + x.tobytes() + s.tobytes())
            drecs.append(struct.pack("<I", n) + wq.tobytes() + deq.tobytes())
    write(out, "vec_dot_mxfp4.bin", recs)
    write(out, "dequant_mxfp4.bin", drecs)
    # llama.cpp's repacked MXFP4 (its default for gpt-oss's experts on
    # AVX2): make_block_mxfp4x8's layout (8 scales, then 8-byte chunks of
    # the 8 rows' quants), gemv token by token and gemm four at a time.
    qmat = getattr(g, "_Z19ggml_quantize_mat_tILl8EL9ggml_type8EEvPKfPvll")
    qmat.argtypes = [P, P, ctypes.c_int64, ctypes.c_int64]
    sig = [ctypes.c_int, P, ctypes.c_size_t, P, P, ctypes.c_int, ctypes.c_int]
    g.ggml_gemv_mxfp4_8x8_q8_0.argtypes = sig
    g.ggml_gemm_mxfp4_8x8_q8_0.argtypes = sig
    recs = []
    for rows, n, nt, scale in [(8, 64, 4, 1.0), (16, 96, 8, 0.02), (24, 256, 4, 300.0), (48, 2880, 8, 1.0)]:
        nb = n // 32
        w = (r.standard_normal(rows * n) * 0.05).astype(np.float32)
        x = (r.standard_normal(nt * n) * scale).astype(np.float32)
        x[r.integers(0, nt * n, 4)] *= 40
        wq, _ = q(w)
        blocks = wq.reshape(rows, nb, 17)
        rp = np.zeros((rows // 8, nb, 136), np.uint8)
        for gi in range(rows // 8):
            for b in range(nb):
                for i in range(8):
                    rp[gi, b, i] = blocks[8 * gi + i, b, 0]
                for i in range(16):
                    rp[gi, b, 8 + 8 * i:16 + 8 * i] = blocks[8 * gi + i % 8, b, 1 + (i // 8) * 8:1 + (i // 8) * 8 + 8]
        gv = np.zeros((nt, rows), np.float32)
        for t in range(nt):
            xq = np.zeros(nb * 34, np.uint8)
            g.quantize_row_q8_0(ptr(x[t * n:]), ptr(xq), n)
            g.ggml_gemv_mxfp4_8x8_q8_0(n, ptr(gv[t]), rows, ptr(rp), ptr(xq), 1, rows)
        gm = np.zeros((nt, rows), np.float32)
        xq4 = np.zeros(nt // 4 * nb * 136, np.uint8)
        for t in range(0, nt, 4):
            qmat(ptr(x[t * n:]), ptr(xq4[t // 4 * nb * 136:]), 4, n)
        g.ggml_gemm_mxfp4_8x8_q8_0(n, ptr(gm), rows, ptr(rp), ptr(xq4), nt, rows)
        recs.append(struct.pack("<III", rows, n, nt) + wq.tobytes() + x.tobytes() + gv.tobytes() + gm.tobytes())
    write(out, "repack_mxfp4.bin", recs)


if __name__ == "__main__":
    # make_golden.py DIR [GROUP...]: every group, or only those named. The
    # vec_dot and reduction files need an AVX-512 build (their lane layouts
    # are AVX-512's); repacked's arithmetic is the same with AVX2.
    out, only = sys.argv[1], set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    for f in (dots, softmax, silu, quant, qdots, f16conv, libm, repacked, mxfp4):
        if not only or f.__name__ in only:
            f(out)
