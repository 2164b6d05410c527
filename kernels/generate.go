package kernels

// The assembly kernels (AVX-512 and AVX2; doc.go lists the families and
// what they serve) are generated with avo by the separate module in _asm,
// one file pair per kernel family; the generated files are committed. `go generate` rewrites them, and `go test` in _asm checks that
// they are up to date.
//go:generate sh -c "cd _asm && go run . -kernel gemm32 -pkg kernels -out ../gemm32_amd64.s -stubs ../gemm32_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel gemm32avx2 -pkg kernels -out ../gemm32avx2_amd64.s -stubs ../gemm32avx2_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel gemmk -pkg kernels -out ../gemmk_amd64.s -stubs ../gemmk_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel vec -pkg kernels -out ../vec_amd64.s -stubs ../vec_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel quant -pkg kernels -out ../quant_amd64.s -stubs ../quant_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel attn -pkg kernels -out ../attn_amd64.s -stubs ../attn_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel ceil -pkg kernels -out ../ceil_amd64.s -stubs ../ceil_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel gemm5 -pkg kernels -out ../gemm5_amd64.s -stubs ../gemm5_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel kq23 -pkg kernels -out ../kq23_amd64.s -stubs ../kq23_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel gemmf -pkg kernels -out ../gemmf_amd64.s -stubs ../gemmf_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel vecavx2 -pkg kernels -out ../vecavx2_amd64.s -stubs ../vecavx2_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel quantavx2 -pkg kernels -out ../quantavx2_amd64.s -stubs ../quantavx2_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel rope -pkg kernels -out ../rope_amd64.s -stubs ../rope_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel gemmr -pkg kernels -out ../gemmr_amd64.s -stubs ../gemmr_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel gemmq -pkg kernels -out ../gemmq_amd64.s -stubs ../gemmq_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel gemmqavx2 -pkg kernels -out ../gemmqavx2_amd64.s -stubs ../gemmqavx2_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel attnavx2 -pkg kernels -out ../attnavx2_amd64.s -stubs ../attnavx2_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel kfast -pkg kernels -out ../kfast_amd64.s -stubs ../kfast_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel kfastavx2 -pkg kernels -out ../kfastavx2_amd64.s -stubs ../kfastavx2_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel tiled -pkg kernels -out ../tiled_amd64.s -stubs ../tiled_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel tiledavx2 -pkg kernels -out ../tiledavx2_amd64.s -stubs ../tiledavx2_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel prefetch -pkg kernels -out ../prefetch_amd64.s -stubs ../prefetch_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel mxfp4 -pkg kernels -out ../mxfp4_amd64.s -stubs ../mxfp4_stubs_amd64.go"
//go:generate sh -c "cd _asm && go run . -kernel moe -pkg kernels -out ../moe_amd64.s -stubs ../moe_stubs_amd64.go"
