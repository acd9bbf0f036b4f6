/// `pushbench-benchmarks histogram` (not yet written).
func runHistogramBenchmarks(_ arguments: [String]) -> Int32 {
    print("pushbench-benchmarks histogram: not yet")
    return 2
}
