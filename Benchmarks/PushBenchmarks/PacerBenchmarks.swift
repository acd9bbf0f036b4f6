/// `pushbench-benchmarks pacer` (not yet written).
func runPacerBenchmarks(_ arguments: [String]) -> Int32 {
    print("pushbench-benchmarks pacer: not yet")
    return 2
}
