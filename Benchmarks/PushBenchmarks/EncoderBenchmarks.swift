// `pushbench-benchmarks encoders`: every encoder variant on the default payload and a 4 KiB one
// (APNs, and the FCM HTTP v1 body), a table with ratios to foundation, results JSON, and the
// allocation budget gate (Benchmarks/Thresholds/encoders.json). ns/msg is the median over rounds
// of thread CPU time (BenchmarkKit), so other work on a shared machine inflates it less.

import BenchmarkKit
import Foundation
import PushPayload

#if canImport(Glibc)
import Glibc
import PushVocabulary
#endif

private struct EncoderBenchOptions {
    var out = "results/benchmarks"
    var thresholds = "Benchmarks/Thresholds/encoders.json"
    var runID: String?
    var label = "encoders"
    var rounds = 5
    var roundMilliseconds = 20
    var payloads: [String]?
    var variants: [EncoderVariant] = EncoderVariant.allCases
}

private let encoderBenchUsage = """
    USAGE: pushbench-benchmarks encoders [--out DIR] [--thresholds FILE|none] [--run-id ID] [--label NAME]
                                         [--rounds N] [--round-ms MS] [--payloads a,b] [--variants a,b]

    Runs every encoder variant on each payload (default, 4k, fcm-default, fcm-4k), prints ns/msg,
    allocs/msg and the ratio to foundation, writes DIR/<run-id>.json and DIR/latest.json, and exits 1
    when an allocation budget is exceeded (2 on bad options).
    """

private func parseEncoderBenchOptions(_ args: [String]) -> EncoderBenchOptions? {
    var o = EncoderBenchOptions()
    var i = 0
    func value(_ name: String) -> String? {
        guard i + 1 < args.count else {
            print("pushbench-benchmarks encoders: \(name) needs a value")
            return nil
        }
        i += 1
        return args[i]
    }
    while i < args.count {
        let a = args[i]
        switch a {
        case "--out": guard let v = value(a) else { return nil }; o.out = v
        case "--thresholds": guard let v = value(a) else { return nil }; o.thresholds = v
        case "--run-id": guard let v = value(a) else { return nil }; o.runID = v
        case "--label": guard let v = value(a) else { return nil }; o.label = v
        case "--rounds":
            guard let v = value(a), let n = Int(v), n > 0 else { print("pushbench-benchmarks encoders: --rounds needs a positive number"); return nil }
            o.rounds = n
        case "--round-ms":
            guard let v = value(a), let n = Int(v), n > 0 else { print("pushbench-benchmarks encoders: --round-ms needs a positive number"); return nil }
            o.roundMilliseconds = n
        case "--payloads": guard let v = value(a) else { return nil }; o.payloads = v.split(separator: ",").map(String.init)
        case "--variants":
            guard let v = value(a) else { return nil }
            var list: [EncoderVariant] = []
            for name in v.split(separator: ",") {
                guard let variant = EncoderVariant(rawValue: String(name)) else {
                    print("pushbench-benchmarks encoders: unknown variant '\(name)' (known: \(EncoderVariant.allCases.map(\.rawValue).joined(separator: ", ")))")
                    return nil
                }
                list.append(variant)
            }
            o.variants = list
        case "-h", "--help":
            print(encoderBenchUsage)
            return nil
        default:
            print("pushbench-benchmarks encoders: unknown option '\(a)'\n\n\(encoderBenchUsage)")
            return nil
        }
        i += 1
    }
    return o
}

/// A template padded with a `{{pad:N}}` field so the payload is exactly `size` bytes.
private func paddedTemplate(_ base: String, to size: Int, options: TemplateOptions) throws -> PayloadTemplate {
    precondition(base.hasSuffix("}"))
    let probe = try PayloadTemplate(text: String(base.dropLast()) + ",\"filler\":\"{{pad:0}}\"}", options: options)
    let n = size - probe.maxLength
    return try PayloadTemplate(text: String(base.dropLast()) + ",\"filler\":\"{{pad:\(n)}}\"}", options: options)
}

/// What a typical provider writes for the default payload: a Codable struct with static keys.
/// Measured beside the `foundation` variant (which resolves a generic template tree) to show the
/// baseline is not slowed by its genericity.
private struct ProviderPayload: Encodable {
    struct APS: Encodable {
        struct Alert: Encodable { var title: String; var body: String }
        var alert: Alert
        var badge: Int
    }
    var aps: APS
    var customKey: String
    var message_id: String
}

/// The reference loop: fill the provider struct and encode it with JSONEncoder (`sorted`: the
/// options the foundation variant uses, so the bytes match; else JSONEncoder's defaults).
private final class StructRunner {
    let sorted = JSONEncoder()
    let plain = JSONEncoder()
    let slot: UnsafeMutableRawBufferPointer
    var rng = PushRandom(seed: 7)

    init(slot: UnsafeMutableRawBufferPointer) {
        self.slot = slot
        sorted.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    func payload(_ id: PushUUID) -> ProviderPayload {
        ProviderPayload(aps: .init(alert: .init(title: "Portugal vs. Denmark", body: "great match!"), badge: 1),
                        customKey: "customValue", message_id: id.description)
    }

    func run(_ n: Int, sortedKeys: Bool) {
        let encoder = sortedKeys ? sorted : plain
        var total = 0
        for _ in 0..<n {
            let data = try! encoder.encode(payload(rng.uuid()))
            data.copyBytes(to: slot.bindMemory(to: UInt8.self), count: data.count)
            total &+= data.count
        }
        blackHole(total)
    }
}

/// The measured loop for one encoder: builds request k's context (seq, token, message id from the
/// PRNG) and encodes it into the slot. State lives in locals inside `run`, so the loop pays no
/// exclusivity checks on captured variables.
private final class EncoderRunner {
    let encoder: any PayloadEncoder
    let tokens: DeviceTokens
    let slot: UnsafeMutableRawBufferPointer
    var rng = PushRandom(seed: 7)
    var seq: UInt64 = 0

    init(_ encoder: any PayloadEncoder, _ tokens: DeviceTokens, _ slot: UnsafeMutableRawBufferPointer) {
        self.encoder = encoder
        self.tokens = tokens
        self.slot = slot
    }

    func run(_ n: Int) {
        var rng = self.rng
        var seq = self.seq
        var total = 0
        let encoder = self.encoder, tokens = self.tokens, slot = self.slot
        for _ in 0..<n {
            seq &+= 1
            let ctx = RequestContext(seq: seq, token: tokens.token(Int(seq & 1023)), messageID: rng.uuid())
            total &+= encoder.encode(ctx, into: slot) ?? 0
        }
        self.rng = rng
        self.seq = seq
        blackHole(total)
    }
}

func runEncoderBenchmarks(_ arguments: [String]) -> Int32 {
    guard let options = parseEncoderBenchOptions(arguments) else { return arguments.contains("--help") || arguments.contains("-h") ? 0 : 2 }

    // Options without slack: seq/badge/token lengths are fixed by the benchmark's own inputs.
    let apnsOptions = TemplateOptions(limit: 4096, maxTokenLength: 64, maxSeq: 0)
    let fcmOptions = TemplateOptions(limit: 4096, maxTokenLength: 64, maxSeq: 0)
    var payloads: [(name: String, template: PayloadTemplate)] = []
    do {
        payloads = [
            ("default", PayloadTemplate.defaultAPNs()),
            ("4k", try paddedTemplate(PayloadTemplate.defaultAPNsText, to: 4096, options: apnsOptions)),
            ("fcm-default", PayloadTemplate.defaultFCM(options: fcmOptions)),
            ("fcm-4k", try paddedTemplate(PayloadTemplate.defaultFCMText, to: 4096, options: fcmOptions)),
        ]
    } catch {
        print("pushbench-benchmarks encoders: cannot build the payloads: \(error)")
        return 2
    }
    if let wanted = options.payloads {
        let unknown = wanted.filter { w in !payloads.contains { $0.name == w } }
        if !unknown.isEmpty {
            print("pushbench-benchmarks encoders: unknown payload(s) \(unknown.joined(separator: ", ")) (known: \(payloads.map(\.name).joined(separator: ", ")))")
            return 2
        }
        payloads = payloads.filter { wanted.contains($0.name) }
    }

    let tokens = DeviceTokens(synthetic: 1024, seed: 1)
    let slot = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 64)
    defer { slot.deallocate() }

    var results: [String: [String: BenchmarkResult]] = [:]
    var sizes: [String: Int] = [:]
    var referenceResults: [String: BenchmarkResult] = [:]
    let structRunner = StructRunner(slot: slot)
    for p in payloads {
        // The variants of one payload are measured with interleaved rounds (fair ratios under load).
        let runners = options.variants.map { EncoderRunner(makePayloadEncoder($0, template: p.template), tokens, slot) }
        var cases: [(name: String, body: (Int) -> Void)] = runners.map { r in ("\(r.encoder.variant.rawValue)/\(p.name)", { n in r.run(n) }) }
        if p.name == "default" && options.variants.contains(.foundation) {
            cases.append(("codable-struct/default", { n in structRunner.run(n, sortedKeys: true) }))
            cases.append(("codable-struct-unsorted/default", { n in structRunner.run(n, sortedKeys: false) }))
        }
        let measured = Benchmark.runInterleaved(cases, rounds: options.rounds,
                                                roundNanoseconds: UInt64(options.roundMilliseconds) * 1_000_000)
        for r in measured.dropFirst(runners.count) { referenceResults[r.name] = r }
        for (runner, r) in zip(runners, measured) {
            results[runner.encoder.variant.rawValue, default: [:]][p.name] = r
            // Every variant writes the same bytes; record the size once.
            sizes[p.name] = runner.encoder.encode(RequestContext(seq: 1, token: tokens.token(1), messageID: PushUUID(high: 1, low: 2)), into: slot)
        }
    }

    // Table.
    func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s : s + String(repeating: " ", count: w - s.count) }
    func lpad(_ s: String, _ w: Int) -> String { s.count >= w ? s : String(repeating: " ", count: w - s.count) + s }
    func fmt(_ x: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", x) }
    print(pad("variant", 11) + pad("payload", 13) + lpad("bytes", 6) + lpad("ns/msg", 11) + lpad("min ns", 11)
          + lpad("allocs/msg", 12) + lpad("vs foundation", 15))
    var json: [String: Any] = [:]
    var measured: [String: Double] = [:]
    for variant in options.variants {
        var perPayload: [String: Any] = [:]
        for p in payloads {
            guard let r = results[variant.rawValue]?[p.name] else { continue }
            let base = results[EncoderVariant.foundation.rawValue]?[p.name]
            let ratio = base.map { $0.nsPerOp / r.nsPerOp }
            print(pad(variant.rawValue, 11) + pad(p.name, 13) + lpad("\(sizes[p.name] ?? 0)", 6)
                  + lpad(fmt(r.nsPerOp, 1), 11) + lpad(fmt(r.nsPerOpMin, 1), 11) + lpad(fmt(r.allocsPerOp, 2), 12)
                  + lpad(ratio.map { fmt($0, 1) + "x" } ?? "-", 15))
            var entry: [String: Any] = [
                "ns_per_msg": (r.nsPerOp * 10).rounded() / 10,
                "ns_per_msg_min": (r.nsPerOpMin * 10).rounded() / 10,
                "wall_ns_per_msg": (r.wallNsPerOp * 10).rounded() / 10,
                "allocs_per_msg": (r.allocsPerOp * 1000).rounded() / 1000,
                "alloc_bytes_per_msg": (r.allocatedBytesPerOp * 10).rounded() / 10,
                "bytes_per_msg": sizes[p.name] ?? 0,
                "iterations": r.iterations,
                "rounds": r.rounds,
            ]
            if let ratio { entry["speedup_vs_foundation"] = (ratio * 10).rounded() / 10 }
            perPayload[p.name] = entry
            measured["encoders.\(variant.rawValue).\(p.name).allocs_per_msg"] = r.allocsPerOp
        }
        json[variant.rawValue] = perPayload
    }

    // Reference: a hand-declared Codable struct for the default payload (measured interleaved with
    // the variants above): sorted keys (same bytes as every variant) and JSONEncoder's defaults.
    var reference: [String: Any] = [:]
    if let r = referenceResults["codable-struct/default"], let u = referenceResults["codable-struct-unsorted/default"] {
        let check = PushUUID(high: 5, low: 6)
        let structBytes = try? structRunner.sorted.encode(structRunner.payload(check))
        let variantBytes = makePayloadEncoder(.foundation, template: PayloadTemplate.defaultAPNs()).encode(RequestContext(seq: 1, messageID: check), into: slot)
            .map { Array(UnsafeRawBufferPointer(rebasing: slot[0..<$0])) }
        let same = structBytes.map { Array($0) } == variantBytes
        let f = results["foundation"]?["default"]
        let z = results["zerocopy"]?["default"]
        print("reference (default payload): Codable struct + JSONEncoder(sorted keys) \(fmt(r.nsPerOp, 1)) ns/msg, \(fmt(r.allocsPerOp, 2)) allocs/msg"
              + (same ? " (same bytes)" : " (BYTES DIFFER)") + "; default options \(fmt(u.nsPerOp, 1)) ns/msg, \(fmt(u.allocsPerOp, 2)) allocs/msg")
        if let f { print("           foundation variant = \(fmt(f.nsPerOp / r.nsPerOp, 2))x the struct's time") }
        if let z { print("           zerocopy vs struct: \(fmt(r.nsPerOp / z.nsPerOp, 1))x faster; vs struct with default options: \(fmt(u.nsPerOp / z.nsPerOp, 1))x") }
        reference = ["ns_per_msg": (r.nsPerOp * 10).rounded() / 10, "allocs_per_msg": (r.allocsPerOp * 1000).rounded() / 1000,
                     "same_bytes": same, "unsorted_keys_ns_per_msg": (u.nsPerOp * 10).rounded() / 10,
                     "unsorted_keys_allocs_per_msg": (u.allocsPerOp * 1000).rounded() / 1000]
    }

    // The JSON parser on the same payloads (what the mock gateway pays per request).
    var parser: [String: Any] = [:]
    print("")
    print(pad("parser", 24) + pad("payload", 13) + lpad("bytes", 6) + lpad("ns/msg", 11) + lpad("allocs/msg", 12) + lpad("MB/s", 9))
    for p in payloads {
        let zero = ZeroCopyEncoder(template: p.template)
        let n = zero.encode(RequestContext(seq: 1, token: tokens.token(1), messageID: PushUUID(high: 1, low: 2)), into: slot) ?? 0
        let body = UnsafeRawBufferPointer(rebasing: slot[0..<n])
        var tape = JSONTape(capacity: 256)
        let runs: [(String, (Int) -> Void)] = [
            ("JSON.validate", { k in for _ in 0..<k { blackHole(JSON.validate(body)) } }),
            ("JSONTape.parse", { k in for _ in 0..<k { blackHole(tape.parse(body)) } }),
        ]
        var entry: [String: Any] = [:]
        for (name, body) in runs {
            let r = Benchmark.run("\(name)/\(p.name)", rounds: options.rounds,
                                  roundNanoseconds: UInt64(options.roundMilliseconds) * 1_000_000, body)
            print(pad(name, 24) + pad(p.name, 13) + lpad("\(n)", 6) + lpad(fmt(r.nsPerOp, 1), 11)
                  + lpad(fmt(r.allocsPerOp, 2), 12) + lpad(fmt(Double(n) / r.nsPerOp * 1000, 0), 9))
            entry[name == "JSON.validate" ? "validate" : "tape"] = [
                "ns_per_msg": (r.nsPerOp * 10).rounded() / 10,
                "allocs_per_msg": (r.allocsPerOp * 1000).rounded() / 1000,
                "bytes_per_msg": n,
            ]
            measured["json_parser.\(name == "JSON.validate" ? "validate" : "tape").\(p.name).allocs_per_msg"] = r.allocsPerOp
        }
        parser[p.name] = entry
    }
    print("")

    // The encoders' targets (reported, not gated: times depend on the machine).
    var targets: [String: Any] = [:]
    if let z = results["zerocopy"]?["default"] {
        let f = results["foundation"]?["default"]
        let speedup = f.map { $0.nsPerOp / z.nsPerOp }
        let met = z.allocsPerOp == 0 && z.nsPerOp <= 50 && (speedup ?? 0) >= 100
        targets = ["zerocopy_default_ns_max": 50, "zerocopy_allocs_max": 0, "speedup_vs_foundation_min": 100, "met": met]
        print("targets (zerocopy, default payload): 0 allocs/msg, <= 50 ns/msg, >= 100x foundation: "
              + (met ? "met" : "NOT met") + " (\(fmt(z.allocsPerOp, 2)) allocs, \(fmt(z.nsPerOp, 1)) ns, "
              + (speedup.map { fmt($0, 1) + "x" } ?? "no foundation run") + ")")
    }

    // Budgets.
    var violations: [String] = []
    if options.thresholds != "none" {
        do {
            let budgets = try Budgets(path: options.thresholds)
            let relevant = Budgets(limits: budgets.limits.filter { measured.keys.contains($0.key) })
            violations = relevant.violations(measured)
        } catch {
            print("pushbench-benchmarks encoders: cannot read budgets \(options.thresholds): \(error)")
            return 2
        }
    }
    for v in violations { print("OVER BUDGET: \(v)") }

    // Results files.
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd-HHmmss"
    let runID = options.runID ?? "\(formatter.string(from: Date()))-\(options.label)"
    var cpu = "unknown"
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
       let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
       let name = line.split(separator: ":", maxSplits: 1).last {
        cpu = name.trimmingCharacters(in: .whitespaces)
    }
    let document: [String: Any] = [
        "run_id": runID,
        "suite": "encoders",
        "tool": "pushbench-benchmarks",
        "machine": ["cpu": cpu, "cores": ProcessInfo.processInfo.activeProcessorCount],
        "encoders": json,
        "json_parser": parser,
        "reference_codable_struct_default": reference,
        "targets": targets,
        "budget_violations": violations,
    ]
    do {
        try FileManager.default.createDirectory(atPath: options.out, withIntermediateDirectories: true)
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        let path = "\(options.out)/\(runID).json"
        try data.write(to: URL(fileURLWithPath: path))
        try data.write(to: URL(fileURLWithPath: "\(options.out)/latest.json"))
        print("wrote \(path) and \(options.out)/latest.json")
    } catch {
        print("pushbench-benchmarks encoders: cannot write results to \(options.out): \(error)")
        return 2
    }
    return violations.isEmpty ? 0 : 1
}
