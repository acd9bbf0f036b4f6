import LoadGenerator
import PushPayload

/// A deliberately slowed encoder, for checking the nightly's regression gate (docs/nightly.md): selected
/// by the environment variable `PUSHBENCH_TEST_SLOW_ENCODER=<variant>:<time>` (e.g. `copy:20us`) in the
/// test build of the command, `pushbench-testing`, never in pushbench. The named variant burns `time` of
/// CPU per payload before encoding as usual: it spins rather than sleeps, because a slow encoder costs
/// CPU, so CPU per million pushes rises as well as latency. The bytes sent are unchanged.
public struct TestSlowdown: Sendable, Equatable {
    /// The environment variable that selects it.
    public static let environmentVariable = "PUSHBENCH_TEST_SLOW_ENCODER"

    /// The variant slowed down.
    public var variant: EncoderVariant
    /// CPU time burnt per payload, in ns.
    public var nanoseconds: UInt64

    /// A slowdown of `variant` by `nanoseconds` per payload.
    public init(variant: EncoderVariant, nanoseconds: UInt64) {
        self.variant = variant
        self.nanoseconds = nanoseconds
    }

    /// Parses `<variant>:<time>` (`copy:20us`, `zerocopy:2ms`); the error names what was wrong.
    public static func parse(_ text: String) throws(LoadRunError) -> TestSlowdown {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let v = EncoderVariant(rawValue: parts[0]) else {
            throw LoadRunError(description: "\(environmentVariable)='\(text)': expected <zerocopy|copy|foundation>:<time>, e.g. copy:20us",
                               unreachable: false)
        }
        guard let ns = ComparisonSchedule.parseDuration(parts[1]) else {
            throw LoadRunError(description: "\(environmentVariable)='\(text)': '\(parts[1])' is not a time (20us, 1ms)",
                               unreachable: false)
        }
        return TestSlowdown(variant: v, nanoseconds: ns)
    }

    /// The slowdown the environment asks for, if any.
    public static func fromEnvironment(_ environment: [String: String]) throws(LoadRunError) -> TestSlowdown? {
        guard let text = environment[environmentVariable], !text.isEmpty else { return nil }
        return try parse(text)
    }

    /// The stand-in encoder for ``variant``: the real one, slowed.
    public var standIn: EncoderStandIn {
        let ns = nanoseconds, v = variant
        return EncoderStandIn(
            variant: v, addedNanoseconds: ns,
            notice: "\(Self.environmentVariable) is set: encoder \(v.rawValue) spins \(ns / 1000) µs per payload "
                + "(a test of the regression gate, not a measurement)",
            make: { template in SlowedEncoder(makePayloadEncoder(v, template: template), spinNanoseconds: ns) })
    }

    /// Makes every run of this process read ``environmentVariable`` (the test build's main calls it).
    public static func install() {
        EncoderStandIn.install { environment throws(LoadRunError) in try fromEnvironment(environment)?.standIn }
    }
}

/// Wraps an encoder and spins for a fixed time before each payload (``TestSlowdown``).
final class SlowedEncoder: PayloadEncoder {
    private let inner: any PayloadEncoder
    private let spinNanoseconds: UInt64

    init(_ inner: any PayloadEncoder, spinNanoseconds: UInt64) {
        self.inner = inner
        self.spinNanoseconds = spinNanoseconds
    }

    var variant: EncoderVariant { inner.variant }
    var template: PayloadTemplate { inner.template }

    func encode(_ request: RequestContext, into slot: UnsafeMutableRawBufferPointer) -> Int? {
        let end = MonotonicClock.nanoseconds() &+ spinNanoseconds
        while MonotonicClock.nanoseconds() < end {}
        return inner.encode(request, into: slot)
    }
}
