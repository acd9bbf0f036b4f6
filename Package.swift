// swift-tools-version:6.0
// pushbench: load-testing and benchmark harness for HTTP/2 push notifications.
// Only the toolchain and Debian's C libraries: no outside packages (design.md "Stack").
import PackageDescription

// The modules on the per-request path, in release builds only, skip the run-time exclusivity checks
// (swift_beginAccess on every class-property mutation: ~4% of the client's CPU per request under a
// profile). Debug builds, which the tests run, keep them, so an overlapping access still traps there.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "pushbench",
    products: [
        .executable(name: "pushbench", targets: ["pushbench"]),
        .executable(name: "pushbench-benchmarks", targets: ["PushBenchmarks"]),
    ],
    targets: [
        // C bridges: module.modulemap + shim.h + pkg-config, as swift-nio bridges its C dependencies.
        .systemLibrary(name: "CUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // malloc interposer with thread-local counters; linked by tests and benchmarks only, never by pushbench.
        .target(name: "CAllocCounter"),

        .target(name: "PushPayload", swiftSettings: hotPath),
        .target(name: "PushMetrics", dependencies: ["CZlib"], swiftSettings: hotPath),
        .target(name: "PushTransport", dependencies: ["CUV", "CNGHTTP2"], swiftSettings: hotPath),
        .target(name: "MockGateway", dependencies: ["PushTransport", "PushPayload"], swiftSettings: hotPath),
        .target(name: "LoadGenerator", dependencies: ["PushTransport", "PushPayload", "PushMetrics", "MockGateway"], swiftSettings: hotPath),
        .target(name: "PushbenchCLI", dependencies: ["LoadGenerator", "MockGateway", "PushMetrics", "PushPayload", "PushTransport"]),
        .executableTarget(name: "pushbench", dependencies: ["PushbenchCLI"]),

        .target(name: "BenchmarkKit", dependencies: ["CAllocCounter"], path: "Benchmarks/BenchmarkKit"),
        .executableTarget(
            name: "PushBenchmarks",
            dependencies: ["BenchmarkKit", "PushPayload", "PushMetrics", "PushTransport", "MockGateway", "LoadGenerator"],
            path: "Benchmarks/PushBenchmarks"
        ),

        .testTarget(name: "PushPayloadTests", dependencies: ["PushPayload", "CAllocCounter"]),
        .testTarget(name: "PushMetricsTests", dependencies: ["PushMetrics", "CAllocCounter"], resources: [.copy("Fixtures")]),
        .testTarget(name: "PushTransportTests", dependencies: ["PushTransport", "CAllocCounter"]),
        .testTarget(name: "MockGatewayTests", dependencies: ["MockGateway", "PushTransport", "PushPayload", "CAllocCounter"]),
        .testTarget(name: "LoadGeneratorTests", dependencies: ["LoadGenerator", "MockGateway", "PushMetrics", "CAllocCounter"]),
        .testTarget(name: "PushbenchCLITests", dependencies: ["PushbenchCLI"]),
    ],
    swiftLanguageModes: [.v6]
)
