package kernels

// The K-quants' fast records (see fast.go): the arithmetic of
// kfast_generic.go on the 16-row layouts of kfast_layout.go, one activation
// record format for all five.
var (
	fastQ4K = fastTraits{act: actQ8K, block: 256, rows: kfRows, groupBlock: kfQ4KBlock,
		interleave: interleaveQ4K, dot: dotQ4KFastGeneric, rec: recordsKFast}
	fastQ5K = fastTraits{act: actQ8K, block: 256, rows: kfRows, groupBlock: kfQ5KBlock,
		interleave: interleaveQ5K, dot: dotQ5KFastGeneric, rec: recordsKFast}
	fastQ6K = fastTraits{act: actQ8K, block: 256, rows: kfRows, groupBlock: kfQ6KBlock,
		interleave: interleaveQ6K, dot: dotQ6KFastGeneric, rec: recordsKFast}
	fastQ2K = fastTraits{act: actQ8K, block: 256, rows: kfRows, groupBlock: kfQ2KBlock,
		interleave: interleaveQ2K, dot: dotQ2KFastGeneric, rec: recordsKFast}
	fastQ3K = fastTraits{act: actQ8K, block: 256, rows: kfRows, groupBlock: kfQ3KBlock,
		interleave: interleaveQ3K, dot: dotQ3KFastGeneric, rec: recordsKFast}
)

// recordsKFast is the record format of every fast K-quant kernel.
var recordsKFast = &fastRecords{size: kfRec, write: writeRecordsKFast}
