/// `pushbench-benchmarks encoders` (not yet written).
func runEncoderBenchmarks(_ arguments: [String]) -> Int32 {
    print("pushbench-benchmarks encoders: not yet")
    return 2
}
