import Foundation
import MockGateway
import Testing
@testable import LoadGenerator
@testable import PushbenchCLI

/// The option tables are the one place an option is declared: help, docs/options.md and the parsers
/// must agree with them.
@Suite struct OptionTableTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// docs/options.md is generated from the tables; `PUSHBENCH_UPDATE_DOCS=1` rewrites it.
    @Test func docsOptionsMatchesTheTables() throws {
        let url = Self.repository.appendingPathComponent("docs/options.md")
        let generated = PushbenchMain.optionsReference
        if ProcessInfo.processInfo.environment["PUSHBENCH_UPDATE_DOCS"] == "1" {
            try Data(generated.utf8).write(to: url)
        }
        let committed = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        #expect(committed == generated,
                "docs/options.md is out of step with the option tables: PUSHBENCH_UPDATE_DOCS=1 swift test --filter OptionTableTests")
    }

    /// A default shown in help and docs is what an absent option gives.
    @Test func everyShownDefaultIsTheRealDefault() {
        #expect(RunCommand.options.optionsWithWrongDefaults(base: RunOptions()) == [])
        #expect(GatewayCommand.options.optionsWithWrongDefaults(base: GatewayCommandOptions()) == [])
        #expect(CompareCommand.options.optionsWithWrongDefaults(base: CompareOptions()) == [])
        #expect(MergeCommand.options.optionsWithWrongDefaults(base: MergeOptions()) == [])
        #expect(ReportCommand.options.optionsWithWrongDefaults(base: ReportOptions()) == [])
        #expect(CapacityCommand.options.optionsWithWrongDefaults(base: CapacityOptions()) == [])
        #expect(CredentialsCommand.options.optionsWithWrongDefaults(base: CredentialsOptions()) == [])
        #expect(PipelineCommand.options.optionsWithWrongDefaults(base: RunOptions()) == [])
        // And the check can fail: a table that claims another default is caught.
        let lying = OptionTable<RunOptions>([
            .value("--connections", "N", \.connections, default: "9", help: "") { text, name throws(UsageError) in
                try ValueParser.integer(text, option: name, range: 1...10)
            },
        ])
        #expect(lying.optionsWithWrongDefaults(base: RunOptions()) == ["--connections"])
    }

    /// Every option is in its command's help with its value syntax and default, within the width.
    @Test func helpListsEveryOptionOnce() {
        func check<C: PushbenchCommand>(_ command: C.Type) {
            let help = command.help
            for option in command.options.options {
                let usage = "  " + option.name + (option.valueName.map { " " + $0 } ?? "") + " "
                #expect(help.components(separatedBy: usage).count == 2, "\(command.name) --help: \(option.name)")
                if let d = option.defaultValue { #expect(help.contains("(default \(d))"), "\(command.name): \(option.name)") }
            }
            for line in help.split(separator: "\n") {
                #expect(line.count <= 100, "\(command.name) --help: a line of \(line.count) characters")
            }
        }
        check(RunCommand.self)
        check(GatewayCommand.self)
        check(CompareCommand.self)
        check(MergeCommand.self)
        check(ReportCommand.self)
        check(CapacityCommand.self)
        check(CredentialsCommand.self)
    }

    /// The example in ParsedArguments' documentation, as written there.
    @Test func theParsedArgumentsExampleRuns() throws {
        let args = try ParsedArguments(["--rps", "max", "--quiet"], options: [.value("--rps"), .flag("--quiet")])
        #expect(args.value("--rps") == "max")
        #expect(args.flag("--quiet"))
    }

    /// The example in Option's documentation, as written there.
    @Test func theOptionTableExampleRuns() throws {
        struct Options: Equatable { var connections = 8; var quiet = false }
        let table = OptionTable<Options>([
            .value("--connections", "N", \.connections, default: "8", help: "connections per thread") { text, name throws(UsageError) in
                guard let n = Int(text), n > 0 else { throw UsageError("\(name): '\(text)' is not a count") }
                return n
            },
            .flag("--quiet", \.quiet, help: "no progress line"),
        ])
        let options = try table.parse(["--connections", "16"], onto: Options())
        #expect(options == Options(connections: 16, quiet: false))
        #expect(throws: UsageError("--connections: 'x' is not a count")) { _ = try table.parse(["--connections=x"], onto: Options()) }
    }

    @Test func valuesAreTyped() throws {
        let run = try RunCommand(arguments: ParsedArguments(
            ["--protocol", "fcm", "--push-type", "voip", "--encoder", "copy", "--token-churn", "6/min", "--pace-quantum", "1ms"],
            options: RunCommand.options)).options
        #expect(run.pushProtocol == .fcm && run.pushType == .voip && run.encoderVariants == [.copy])
        #expect(run.tokenChurnPerSecond == 0.1 && run.paceQuantumSeconds == 0.001)
        #expect(run.embeddedGateway.fcm.tokenChurnPerSecond == 0.1)
        #expect(throws: UsageError("--push-type: 'loud' is not one of alert, background, location, voip, complication, fileprovider, mdm, liveactivity, pushtotalk, widgets")) {
            _ = try RunCommand(arguments: ParsedArguments(["--push-type", "loud"], options: RunCommand.options))
        }
        #expect(throws: UsageError("--encoder: 'copy' is given twice")) {
            _ = try RunCommand(arguments: ParsedArguments(["--encoder", "copy,zerocopy,copy"], options: RunCommand.options))
        }
    }

    @Test func compareThresholdsAreParsedOnce() throws {
        let compare = try CompareCommand(arguments: ParsedArguments(["a", "b", "--threshold", "p99.9=5%", "--threshold=rps=1"],
                                                                    options: CompareCommand.options))
        #expect(compare.options.thresholds == ["p999": 5, "achieved_rps": 1])
        #expect(throws: UsageError("--threshold: 'p98' is not a metric; use one of achieved_rps, p50, p90, p99, p999, max, mean, service_p50, service_p99, transport_errors, failed, unfinished, cpu_s, max_rss_bytes")) {
            _ = try CompareCommand(arguments: ParsedArguments(["a", "b", "--threshold", "p98=5"], options: CompareCommand.options))
        }
    }

    /// `gateway` parses straight into the configuration; `run --gateway-arg` reads the same table.
    @Test func gatewayOptionsParseOnceIntoTheConfiguration() throws {
        let args = ["--latency", "2ms", "--fail", "BadDeviceToken=1%", "--topic-subscribers", "news=5", "--streams-drop-on-error"]
        let gateway = try GatewayCommand(arguments: ParsedArguments(args, options: GatewayCommand.options)).configuration
        #expect(gateway == (try GatewayConfiguration.parse(args)))
        #expect(gateway.latency == .fixed(nanos: 2_000_000) && gateway.fcm.topicSubscribers == ["news": 5] && gateway.dropStreamsOnError)
        let run = try RunCommand(arguments: ParsedArguments(args.map { "--gateway-arg=" + $0 }, options: RunCommand.options))
        #expect(run.options.embeddedGateway == gateway)
        #expect(throws: UsageError("--gateway-arg: --latency: 'soon' is not a latency (e.g. 2ms, 1ms-5ms, p50=1ms,p99=10ms)")) {
            _ = try RunCommand(arguments: ParsedArguments(["--gateway-arg=--latency=soon"], options: RunCommand.options))
        }
        #expect(throws: UsageError("--gateway-arg: --capture: given more than once")) {
            _ = try RunCommand(arguments: ParsedArguments(["--protocol", "fcm", "--capture", "2", "--gateway-arg=--capture=3"],
                                                          options: RunCommand.options))
        }
    }

    /// One encoder is one run labelled --label; the comparison is for several (no second loop).
    @Test func oneEncoderIsOneRun() throws {
        func plan(_ args: [String]) throws -> RunExecution.Plan {
            RunExecution.plan(try RunCommand(arguments: ParsedArguments(args, options: RunCommand.options)).options)
        }
        #expect(try plan([]) == .single(.zerocopy))
        #expect(try plan(["--encoder", "copy"]) == .single(.copy))
        #expect(try plan(["--encoder", "copy,foundation"]) == .comparison([.copy, .foundation]))
    }

    /// A run that could not start says "target unreachable" only when the target was (exit 3).
    @Test func onlyAnUnreachableTargetIsCalledUnreachable() {
        let down = RunExecution.Failure(LoadRunError(description: "127.0.0.1:1: connection refused", unreachable: true))
        #expect(down.status == 3 && down.message == "target unreachable: 127.0.0.1:1: connection refused")
        let other = RunExecution.Failure(LoadRunError(description: "driver thread 0: out of memory", unreachable: false))
        #expect(other.status == 1 && other.message == "driver thread 0: out of memory")
    }
}
