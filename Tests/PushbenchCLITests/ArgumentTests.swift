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

    @Test func missingValueIsNamed() {
        #expect(throws: UsageError("--rps: needs a value")) {
            _ = try ParsedArguments(["--rps"], options: [.value("--rps")])
        }
    }

    @Test func durations() throws {
        #expect(try ValueParser.duration("10s", option: "--d") == 10)
        #expect(try ValueParser.duration("500ms", option: "--d") == 0.5)
        #expect(try ValueParser.duration("2m", option: "--d") == 120)
        #expect(try ValueParser.duration("3", option: "--d") == 3)
        #expect(try ValueParser.duration("1m30s", option: "--d") == 90)
        #expect(throws: UsageError("--d: 'soon' is not a duration (a number and a unit: ns, us or µs, ms, s, m, h; "
                                   + "several as in 1m30s, or a number of seconds)")) {
            _ = try ValueParser.duration("soon", option: "--d")
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
    /// them, and says the gateway authenticates nobody.
    @Test func listeningBeyondLoopbackIsWarnedAbout() throws {
        #expect(ListenWarning.message(host: "127.0.0.1", port: 8080) == nil)
        #expect(ListenWarning.message(host: "::1", port: 8080) == nil)
        let all = try #require(ListenWarning.message(host: "0.0.0.0", port: 8080))
        #expect(all.contains("0.0.0.0:8080") && all.contains("lo 127.0.0.1") && all.contains("no authentication"))
        let wrong = try #require(ListenWarning.message(host: "192.0.2.1", port: 1))
        #expect(wrong.contains("no local interface"))
    }
}
