// swift-tools-version:6.0
// pushbench: load-testing and benchmark harness for HTTP/2 push notifications.
// Only the toolchain and Debian's C libraries: no outside packages.
import PackageDescription

// The modules on the per-request path skip the run-time exclusivity checks in release builds: a check
// costs a call on every class-property mutation (docs/loadgen.md "Hot path"). Debug builds, which the
// tests run, keep them, so an overlapping access still traps there.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "pushbench",
    products: [
        .executable(name: "pushbench", targets: ["pushbench"]),
        .executable(name: "pushbench-benchmarks", targets: ["PushBenchmarks"]),
        // pushbench with test-only seams (the nightly gate's slowed encoder); for tests and scripts/nightly.
        .executable(name: "pushbench-testing", targets: ["pushbench-testing"]),
    ],
    targets: [
        // C bridges: module.modulemap + shim.h + pkg-config, as swift-nio bridges its C dependencies.
        .systemLibrary(name: "CUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // libhttp-parser ships no pkg-config file; the module map links it by name.
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        // malloc interposer with thread-local counters; linked by tests and benchmarks only, never by pushbench.
        .target(name: "CAllocCounter", linkerSettings: [.linkedLibrary("crypto")]),

        // The shared vocabulary: protocol names, the JSON core, the quantity parsers, the version. A leaf.
        .target(name: "PushVocabulary", swiftSettings: hotPath),
        // Options declared once (name, value syntax, default, help, typed parser): parser, --help, docs.
        .target(name: "CommandLineOptions", dependencies: ["PushVocabulary"]),
        .target(name: "PushPayload", dependencies: ["PushVocabulary"], swiftSettings: hotPath),
        .target(name: "PushMetrics", dependencies: ["CZlib", "PushVocabulary"], swiftSettings: hotPath),
        .target(name: "PushTransport", dependencies: ["CUV", "CNGHTTP2", "COpenSSL", "CHTTPParser"], swiftSettings: hotPath),
        // Keys, provider tokens (ES256 JWTs) and test certificates, through OpenSSL: for the gateway's
        // authentication, the sender's tokens and `pushbench credentials`.
        .target(name: "PushCredentials", dependencies: ["COpenSSL", "PushVocabulary"]),
        .target(name: "MockGateway", dependencies: ["PushTransport", "PushPayload", "PushVocabulary", "CommandLineOptions", "PushCredentials"],
                swiftSettings: hotPath),
        .target(name: "LoadGenerator", dependencies: ["PushTransport", "PushPayload", "PushMetrics", "PushVocabulary", "PushCredentials"],
                swiftSettings: hotPath),
        .target(name: "PushbenchCLI", dependencies: ["CommandLineOptions", "LoadGenerator", "MockGateway", "PushMetrics", "PushPayload", "PushTransport",
                                                     "PushVocabulary", "PushCredentials"]),
        .executableTarget(name: "pushbench", dependencies: ["PushbenchCLI"]),

        .target(name: "BenchmarkKit", dependencies: ["CAllocCounter", "PushVocabulary"], path: "Benchmarks/BenchmarkKit"),
        .executableTarget(
            name: "PushBenchmarks",
            dependencies: ["BenchmarkKit", "PushVocabulary", "PushPayload", "PushMetrics", "PushTransport", "MockGateway", "LoadGenerator"],
            path: "Benchmarks/PushBenchmarks"
        ),

        // Test support: code only tests and the test build of the command use, kept out of pushbench.
        .target(name: "PushbenchTestSupport", dependencies: ["LoadGenerator", "PushPayload"],
                path: "Tests/Support/PushbenchTestSupport"),
        .executableTarget(name: "pushbench-testing", dependencies: ["PushbenchCLI", "PushbenchTestSupport"],
                          path: "Tests/Support/pushbench-testing"),

        // Allocation counting and a seeded generator for the test targets.
        .target(name: "AllocationTesting", dependencies: ["CAllocCounter"], path: "Tests/Support/AllocationTesting"),

        .testTarget(name: "PushVocabularyTests", dependencies: ["PushVocabulary", "AllocationTesting"]),
        .testTarget(name: "PushCredentialsTests", dependencies: ["PushCredentials"]),
        .testTarget(name: "PushPayloadTests", dependencies: ["PushPayload", "PushVocabulary", "AllocationTesting"]),
        .testTarget(name: "PushMetricsTests", dependencies: ["PushMetrics", "PushVocabulary", "CAllocCounter"], resources: [.copy("Fixtures")]),
        .testTarget(name: "PushTransportTests", dependencies: ["PushTransport", "CAllocCounter"]),
        .testTarget(name: "MockGatewayTests", dependencies: ["MockGateway", "PushTransport", "PushPayload", "PushVocabulary", "CAllocCounter",
                                                        "PushCredentials"]),
        .testTarget(name: "LoadGeneratorTests", dependencies: ["LoadGenerator", "MockGateway", "PushMetrics", "PushVocabulary", "CAllocCounter",
                                                          "PushbenchTestSupport", "PushCredentials"]),
        .testTarget(name: "PushbenchCLITests", dependencies: ["PushbenchCLI", "CommandLineOptions", "PushVocabulary", "PushMetrics", "LoadGenerator"]),
        // The built pushbench and the scripts as a user runs them (run folders, exit statuses, signals,
        // deploy files); the modules' own tests stay in their targets.
        .testTarget(name: "EndToEndTests", dependencies: ["LoadGenerator", "MockGateway", "PushMetrics", "PushPayload", "PushTransport",
                                                     "PushCredentials", "PushbenchTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
