import PushPayload

/// An encoder that takes one variant's place in a run, for test-support builds only: the nightly
/// regression gate is checked with a deliberately slowed encoder (docs/nightly.md). pushbench itself
/// never makes one; a test build installs a source of them with ``EncoderStandIn/install(_:)``.
public struct EncoderStandIn: Sendable {
    /// The variant it replaces.
    public var variant: EncoderVariant
    /// CPU time it adds per payload, in ns (summary.json `ab.test_slowdown_us`).
    public var addedNanoseconds: UInt64
    /// The line printed when a run uses it, naming what it does.
    public var notice: String
    /// Builds a driver thread's encoder for the template.
    var make: @Sendable (PayloadTemplate) -> any PayloadEncoder

    /// A stand-in for `variant`; see the properties.
    public init(variant: EncoderVariant, addedNanoseconds: UInt64, notice: String,
                make: @escaping @Sendable (PayloadTemplate) -> any PayloadEncoder) {
        self.variant = variant
        self.addedNanoseconds = addedNanoseconds
        self.notice = notice
        self.make = make
    }

    /// Makes `config`'s driver threads build the stand-in for ``variant`` (other variants are untouched).
    public func apply(to config: inout LoadConfiguration) {
        let replaced = variant, make = self.make
        config.encoderFactory = { v, template in
            v == replaced ? make(template) : makePayloadEncoder(v, template: template)
        }
    }

    /// Where a run gets its stand-in from: given the process environment, the stand-in asked for (nil:
    /// none), or an error naming what was wrong.
    public typealias Source = @Sendable ([String: String]) throws(LoadRunError) -> EncoderStandIn?

    // Written once by a test build's main before anything runs, read by runs after.
    nonisolated(unsafe) private static var source: Source?

    /// Installs the source of stand-ins. Call once, first thing in a test build's main.
    public static func install(_ source: @escaping Source) { Self.source = source }

    /// The stand-in the environment asks for: always nil in pushbench, where nothing is installed.
    public static func requested(by environment: [String: String]) throws(LoadRunError) -> EncoderStandIn? {
        guard let source else { return nil }
        return try source(environment)
    }
}
