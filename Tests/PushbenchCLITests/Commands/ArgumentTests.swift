import Testing
@testable import PushbenchCLI

@Suite struct ArgumentTests {
    @Test func parsesValuesFlagsAndEqualsForm() throws {
        let a = try ParsedArguments(["--rps=500", "--quiet", "--label", "x", "pos"],
                                    options: [.value("--rps"), .flag("--quiet"), .value("--label")])
        #expect(a.value("--rps") == "500")
        #expect(a.flag("--quiet"))
        #expect(a.value("--label") == "x")
        #expect(a.positionals == ["pos"])
    }

    @Test func unknownOptionIsNamed() {
        #expect(throws: UsageError("unknown option '--rsp'")) {
            _ = try ParsedArguments(["--rsp", "5"], options: [.value("--rps")])
        }
    }

    @Test func missingValueIsNamed() throws {
        #expect(throws: UsageError("--rps: needs a value")) {
            _ = try ParsedArguments(["--rps"], options: [.value("--rps")])
        }
        // `--rps --duration 1s` is --rps without its value, not "unexpected argument '1s'".
        #expect(throws: UsageError("--rps: needs a value (got the option '--duration' instead)")) {
            _ = try ParsedArguments(["--rps", "--duration", "1s"], options: [.value("--rps"), .value("--duration")])
        }
        #expect(throws: UsageError("--rps: needs a value (got the option '--duration' instead)")) {
            _ = try RunCommand(arguments: ParsedArguments(["--rps", "--duration=1s"], options: RunCommand.options))
        }
        // A pass-through option's value is an option of something else.
        let run = try RunCommand(arguments: ParsedArguments(["--gateway-arg", "--threads=2"], options: RunCommand.options))
        #expect(run.options.embeddedGateway.threads == 2)
    }

    @Test func optionsThatContradictEachOtherAreRefused() {
        func refusal(_ args: [String]) -> String? {
            do throws(UsageError) { _ = try RunCommand(arguments: ParsedArguments(args, options: RunCommand.options)); return nil }
            catch { return error.message }
        }
        #expect(refusal(["--requests", "5000", "--duration", "3s"])
                == "--duration: not with --requests (a run ends after N requests or after a duration; give one)")
        #expect(refusal(["--rps", "max", "--pace-quantum", "1ms"]) == "--pace-quantum: only paces an open-loop rate, not --rps max")
        #expect(refusal(["--requests", "5000", "--warmup", "1s"]) == nil)
        #expect(refusal(["--json", "--quiet"]) == nil)
    }

    /// `pushbench --help` lists each subcommand with its text in one column, apart from the widest name.
    @Test func theHelpListsSubcommandsInAColumnApartFromTheirText() throws {
        let lines = PushbenchMain.overview.split(separator: "\n").map(String.init)
        var starts: Set<Int> = []
        for command in PushbenchMain.commands {
            let line = try #require(lines.first { $0.hasPrefix("  \(command.name) ") }, "no line for \(command.name)")
            let start = try #require(line.range(of: command.abstract)).lowerBound
            starts.insert(line.distance(from: line.startIndex, to: start))
            #expect(line[..<start].hasSuffix("  "), "\(line)")
        }
        #expect(starts.count == 1, "the texts start in columns \(starts.sorted())")
    }

    /// A bad option is refused with one line naming the option and what was wrong, before any traffic.
    @Test(arguments: [
        (["--duration", "3"], "--duration: '3' has no unit: say which, as in 3s or 3ms"),
        (["--gateway-arg=--latency=2"], "--gateway-arg: --latency: '2' has no unit: say which, as in 2s or 2ms"),
        (["--token-churn", "0.01"], "--token-churn: '0.01' has no time unit: say per what, as in 0.01/s"),
        (["--rps", "--duration", "1s"], "--rps: needs a value (got the option '--duration' instead)"),
        (["--requests", "5000", "--duration", "3s"], "--duration: not with --requests"),
    ])
    func aBadOptionIsOneLineNamingIt(_ c: ([String], String)) {
        var message: String?
        do throws(UsageError) { _ = try RunCommand(arguments: ParsedArguments(c.0, options: RunCommand.options)) }
        catch { message = error.message }
        #expect(message?.hasPrefix(c.1) == true, "\(message ?? "accepted")")
        #expect(message?.contains("\n") == false)
    }

    /// What only the embedded gateway does is refused with --target, and --capture only with FCM.
    @Test func optionsOnlyTheEmbeddedGatewayHasAreRefusedWithATarget() {
        func refusal(_ args: [String]) -> String? {
            do throws(UsageError) { _ = try RunCommand(arguments: ParsedArguments(args, options: RunCommand.options)); return nil }
            catch { return error.message }
        }
        #expect(refusal(["--target", "http://127.0.0.1:9", "--token-churn", "0.01/s"])
                == "--token-churn: only the embedded gateway can churn tokens, not with --target")
        #expect(refusal(["--target", "http://127.0.0.1:9", "--protocol", "fcm", "--capture", "3"])
                == "--capture: only the embedded gateway captures pushes, not with --target")
        #expect(refusal(["--capture", "3"])?.contains("use --protocol fcm") == true)
        let badRate = refusal(["--token-churn", "lots"])
        #expect(badRate?.contains("--token-churn") == true && badRate?.contains("lots") == true, "\(badRate ?? "accepted")")
        #expect(refusal(["--protocol", "fcm", "--capture", "3"]) == nil)
    }

    @Test func durations() throws {
        #expect(try ValueParser.duration("10s", option: "--d") == 10)
        #expect(try ValueParser.duration("500ms", option: "--d") == 0.5)
        #expect(try ValueParser.duration("2m", option: "--d") == 120)
        #expect(try ValueParser.duration("1m30s", option: "--d") == 90)
        #expect(try ValueParser.duration("0", option: "--d") == 0)
        #expect(throws: UsageError("--d: 'soon' is not a duration (a number and a unit: ns, us or µs, ms, s, m, h; "
                                   + "several as in 1m30s)")) {
            _ = try ValueParser.duration("soon", option: "--d")
        }
        // A bare number is refused rather than read as seconds without saying so.
        #expect(throws: UsageError("--d: '3' has no unit: say which, as in 3s or 3ms (a number and a unit: ns, us or µs, ms, s, m, h; "
                                   + "several as in 1m30s)")) {
            _ = try ValueParser.duration("3", option: "--d")
        }
    }

    @Test func theWarmUpIsTwoSecondsUnlessAnExactCountIsAsked() throws {
        func warmup(_ args: [String]) throws -> Double {
            try RunCommand(arguments: ParsedArguments(args, options: RunCommand.options)).options.warmupSeconds
        }
        #expect(try warmup([]) == 2)
        #expect(try warmup(["--warmup", "500ms"]) == 0.5)
        // --requests N sends N pushes and no unasked-for warm-up before them, unless --warmup says so.
        #expect(try warmup(["--requests", "100"]) == 0)
        #expect(try warmup(["--requests", "100", "--warmup", "1s"]) == 1)
    }

    @Test func runOptionsValidate() throws {
        let run = try RunCommand(arguments: ParsedArguments(["--rps", "max", "--encoder", "copy,zerocopy", "--tokens", "50"],
                                                            options: RunCommand.options))
        #expect(run.options.rate == .max)
        #expect(run.options.encoders == ["copy", "zerocopy"])
        #expect(run.options.tokens == .synthetic(50))
        #expect(throws: UsageError("--rps: 'fast' is not a rate (500, 10k, 1.5M), max, or a ramp (10k..200k)")) {
            _ = try RunCommand(arguments: ParsedArguments(["--rps", "fast"], options: RunCommand.options))
        }
        #expect(try RunCommand(arguments: ParsedArguments(["--no-apns-id"], options: RunCommand.options)).options.noApnsID)
        #expect(try !RunCommand(arguments: ParsedArguments([], options: RunCommand.options)).options.noApnsID)
        #expect(throws: UsageError("--no-apns-id: FCM requests carry no apns-id (it applies to --protocol apns)")) {
            _ = try RunCommand(arguments: ParsedArguments(["--protocol", "fcm", "--no-apns-id"], options: RunCommand.options))
        }
        #expect(throws: UsageError("--encoder: 'json' is not one of zerocopy, copy, foundation")) {
            _ = try RunCommand(arguments: ParsedArguments(["--encoder", "json"], options: RunCommand.options))
        }
    }

    @Test func mainReturnsTwoForUsageErrorsAndZeroForHelp() {
        #expect(PushbenchMain.run(["pushbench", "--bogus"]) == 2)
        #expect(PushbenchMain.run(["pushbench", "nosuch"]) == 2)
        #expect(PushbenchMain.run(["pushbench", "compare", "--help"]) == 0)
        #expect(PushbenchMain.run(["pushbench", "--connections", "0"]) == 2)
    }

    /// Loopback needs no warning; the wildcard address names the interfaces it reaches, loopback among
    /// them, and says the gateway authenticates nobody. An address no interface holds gets none either:
    /// the gateway cannot listen there, and says so in the one line of its failed start.
    @Test func listeningBeyondLoopbackIsWarnedAbout() throws {
        #expect(ListenWarning.message(host: "127.0.0.1", port: 8080) == nil)
        #expect(ListenWarning.message(host: "::1", port: 8080) == nil)
        let all = try #require(ListenWarning.message(host: "0.0.0.0", port: 8080))
        #expect(all.contains("0.0.0.0:8080") && all.contains("lo 127.0.0.1") && all.contains("no authentication"))
        #expect(ListenWarning.message(host: "192.0.2.1", port: 1) == nil)
    }

    /// The dashboard is warned about the same way: read-only, but anyone reaching it watches the run.
    @Test func aDashboardBeyondLoopbackIsWarnedAbout() throws {
        #expect(ListenWarning.dashboardMessage(host: "127.0.0.1", port: 8088) == nil)
        #expect(ListenWarning.dashboardMessage(host: "::1", port: 8088) == nil)
        let all = try #require(ListenWarning.dashboardMessage(host: "0.0.0.0", port: 8088))
        #expect(all.hasPrefix("warning: the dashboard on 0.0.0.0:8088 reaches ") && all.contains("lo 127.0.0.1"))
        #expect(all.hasSuffix("it is read-only, but anyone who can reach it can watch the run"))
        let six = try #require(ListenWarning.dashboardMessage(host: "::", port: 8088))
        #expect(six.hasPrefix("warning: the dashboard on [::]:8088 reaches "))
    }
}
