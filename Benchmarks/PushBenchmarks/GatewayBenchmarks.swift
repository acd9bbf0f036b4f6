/// `pushbench-benchmarks gateway` (not yet written).
func runGatewayBenchmarks(_ arguments: [String]) -> Int32 {
    print("pushbench-benchmarks gateway: not yet")
    return 2
}
