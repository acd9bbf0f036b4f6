/// `pushbench-benchmarks transport-server` (not yet written).
func runTransportBenchmarks(_ arguments: [String]) -> Int32 {
    print("pushbench-benchmarks transport-server: not yet")
    return 2
}
