package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// vpdpbusd emits VPDPBUSD (AVX512_VNNI), which avo v0.5 does not know:
// acc[i] += Σ_{j<4} unsigned[4i+j]·signed[4i+j] (u8 × s8, exact in int32).
// In Go operand order the signed source comes first and may be memory.
func vpdpbusd(signed, unsigned, acc Op) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPBUSD",
		Operands: []Op{signed, unsigned, acc},
		Inputs:   []Op{signed, unsigned, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512VNNI"},
	})
}

// vpdpwssd emits VPDPWSSD (AVX512_VNNI): acc[i] += a[2i]·b[2i] +
// a[2i+1]·b[2i+1] on signed int16 pairs, exact in int32.
func vpdpwssd(a, b, acc Op) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPWSSD",
		Operands: []Op{a, b, acc},
		Inputs:   []Op{a, b, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512VNNI"},
	})
}

// zero emits VPXORD z, z, z marked as a zeroing idiom, so that the
// liveness analysis does not see a read of z (avo only marks the VEX forms).
func zero(z reg.Register) {
	Instruction(&ir.Instruction{
		Opcode:           "VPXORD",
		Operands:         []Op{z, z, z},
		Inputs:           []Op{z, z},
		Outputs:          []Op{z},
		CancellingInputs: true,
	})
}

// constants emitted once per file, by name.
var emitted = map[string]Mem{}

// constU32 returns a read-only table of 32-bit values.
func constU32(name string, vals ...uint32) Mem {
	if m, ok := emitted[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vals {
		DATA(4*i, U32(v))
	}
	emitted[name] = m
	return m
}

// constU64 returns a read-only table of 64-bit values.
func constU64(name string, vals ...uint64) Mem {
	if m, ok := emitted[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vals {
		DATA(8*i, U64(v))
	}
	emitted[name] = m
	return m
}

// strided addresses element a (0..7) of a sequence of records at base,
// stride bytes apart, using stride and 3·stride registers (and a second
// base, 4·stride further, for elements 4..7).
type strided struct {
	base, stride, stride3 reg.GPVirtual
	base4                 reg.GPVirtual // nil when at most 4 elements
}

func (s strided) at(a, disp int) Mem {
	b := s.base
	if a >= 4 {
		b, a = s.base4, a-4
	}
	switch a {
	case 0:
		return Mem{Base: b, Disp: disp}
	case 1:
		return Mem{Base: b, Index: s.stride, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: b, Index: s.stride, Scale: 2, Disp: disp}
	case 3:
		return Mem{Base: b, Index: s.stride3, Scale: 1, Disp: disp}
	}
	panic(fmt.Sprintf("strided: element %d", a))
}

// advance moves the sequence by n bytes.
func (s strided) advance(n int) {
	ADDQ(U32(n), s.base)
	if s.base4 != nil {
		ADDQ(U32(n), s.base4)
	}
}

// loadStrided loads base and stride arguments for count elements, the
// stride scaled by unit bytes.
func loadStrided(base, stride string, count, unit int) strided {
	s := strided{base: GP64(), stride: GP64(), stride3: GP64()}
	Load(Param(base), s.base)
	Load(Param(stride), s.stride)
	if unit > 1 {
		IMUL3Q(U32(unit), s.stride, s.stride)
	}
	LEAQ(Mem{Base: s.stride, Index: s.stride, Scale: 2}, s.stride3)
	if count > 4 {
		s.base4 = GP64()
		LEAQ(Mem{Base: s.base, Index: s.stride, Scale: 4}, s.base4)
	}
	return s
}

// pinned hands out physical ZMM registers from Z31 downwards. Long-lived
// accumulators are pinned so that avo's greedy allocator only has to
// colour the short-lived temporaries.
type pinned struct{ next int }

// zero returns n zeroed physical ZMM registers.
func (p *pinned) zero(n int) []reg.VecPhysical {
	z := make([]reg.VecPhysical, n)
	for i := range z {
		z[i] = zmmPhysical[31-p.next]
		p.next++
		zero(z[i])
	}
	return z
}

var zmmPhysical = []reg.VecPhysical{
	reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7,
	reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15,
	reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23,
	reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31,
}

// loadGP loads an integer or pointer argument into a new register.
func loadGP(name string) reg.GPVirtual {
	r := GP64()
	Load(Param(name), r)
	return r
}

// groupKernel emits the head of a kernel over groups of weight rows with
// the signature all of them share, documented by doc: it zeroes the row
// counter r and loads the first group's address into group.
func groupKernel(name, doc string) (r, group reg.GPVirtual) {
	TEXT(name, NOSPLIT, "func(w *byte, groupBytes, rows int, act *byte, actStride int, nb int, dst *float32, dstStride int)")
	Doc(doc)
	Pragma("noescape")
	r, group = GP64(), GP64()
	XORQ(r, r)
	Load(Param("w"), group)
	return r, group
}

// storeAcc stores acc[a] at dst row a (one row per activation, dstStride
// floats apart) from column r.
func storeAcc[V Op](r reg.GPVirtual, acc []V) {
	dst := loadStrided("dst", "dstStride", len(acc), 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	if dst.base4 != nil {
		LEAQ(Mem{Base: dst.base4, Index: r, Scale: 4}, dst.base4)
	}
	for a, v := range acc {
		VMOVUPS(v, dst.at(a, 0))
	}
}

// nextGroup advances group by groupBytes and r by groupRows, then loops
// as loopRows.
func nextGroup(name string, r, group reg.GPVirtual, groupRows int) {
	gb := loadGP("groupBytes")
	ADDQ(gb, group)
	ADDQ(U8(groupRows), r)
	loopRows(name, r)
}

// loopRows jumps back to name_rows while r < rows, then ends the kernel.
func loopRows(name string, r reg.GPVirtual) {
	rows := loadGP("rows")
	CMPQ(r, rows)
	JL(LabelRef(name + "_rows"))
	VZEROUPPER()
	RET()
}

// rowKernelSig is the signature of the kernels over single weight rows,
// rowBytes apart.
const rowKernelSig = "func(w *byte, rowBytes, rows int, act *byte, actStride int, nb int, dst *float32, dstStride int)"

// rowsLoop zeroes a row counter r and opens the loop over rows (the label
// name_rows that loopRows and nextGroup jump back to).
func rowsLoop(name string) (r reg.GPVirtual) {
	r = GP64()
	XORQ(r, r)
	Label(name + "_rows")
	return r
}

// rowPointer returns the address of weight row r: w + r·rowBytes.
func rowPointer(r reg.GPVirtual) reg.GPVirtual {
	w := GP64()
	rb := loadGP("rowBytes")
	IMULQ(r, rb)
	Load(Param("w"), w)
	ADDQ(rb, w)
	return w
}
