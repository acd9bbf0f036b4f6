#if canImport(Glibc)
import Glibc
#endif

// pushbench-benchmarks <suite> [args]: each suite lives in its own file and returns an exit status
// (0 fine, 1 over a committed budget, 2 bad input).
let suites: [(name: String, about: String, run: ([String]) -> Int32)] = [
    ("encoders", "payload encoder variants: ns/msg, allocs/msg, bytes/msg", runEncoderBenchmarks),
    ("histogram", "HDR histogram recording: ns/record, allocs/record", runHistogramBenchmarks),
    ("transport-server", "a trivial 200-responder on PushTransport, for h2load", runTransportBenchmarks),
    ("gateway", "the mock gateway, for h2load comparisons", runGatewayBenchmarks),
    ("pacer", "the load generator's pacer: spread of inter-send gaps", runPacerBenchmarks),
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first, let suite = suites.first(where: { $0.name == name }) else {
    print("USAGE: pushbench-benchmarks <suite> [options]\n\nSUITES:")
    for suite in suites { print("  \(suite.name)\t\(suite.about)") }
    exit(arguments.isEmpty ? 0 : 2)
}
exit(suite.run(Array(arguments.dropFirst())))
