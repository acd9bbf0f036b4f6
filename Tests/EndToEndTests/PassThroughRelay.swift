import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// nghttpx as a push service that only relays: the pipeline tests' front door when the service's own
/// behaviour is not what they measure. Its front speaks TLS h2 (a throwaway certificate, `cert`, for
/// the run to trust) or h2c; its back reaches the egress over TLS (unverified) or h2c. Stopped with
/// SIGKILL: Foundation starts children with SIGTERM blocked, so `terminate()` would not reach it (its
/// worker ends by itself once the master is gone).
final class PassThroughRelay {
    /// The port it listens on.
    let port = PipelineServiceTests.freePort()
    /// The front's certificate (PEM file) with a TLS front; nil with an h2c one.
    let cert: String?
    private let process = Process()

    /// A relay to the egress on 127.0.0.1:`egress`, its files in `dir`; throws when nghttpx is missing.
    init(egress: Int, dir: URL, tlsFront: Bool, tlsBack: Bool, backendConnections: Int = 4) throws {
        let nghttpx = try #require(["/usr/sbin/nghttpx", "/usr/bin/nghttpx"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                   "nghttpx is missing (scripts/setup installs nghttp2-proxy)")
        // --conf=/dev/null: a system nghttpx.conf (Debian's logs to syslog) must not apply.
        var args = ["--conf=/dev/null", "-f127.0.0.1,\(port)" + (tlsFront ? "" : ";no-tls"),
                    "-b127.0.0.1,\(egress);;proto=h2" + (tlsBack ? ";tls" : ""), "--workers=1",
                    "--backend-connections-per-host=\(backendConnections)", "--errorlog-file=/dev/null"]
        if tlsBack { args.append("--insecure") }
        if tlsFront {
            let key = dir.appendingPathComponent("relay-key.pem").path, cert = dir.appendingPathComponent("relay-cert.pem").path
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost",
                                 "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert, "-days", "1"]
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            #expect(openssl.terminationStatus == 0, "openssl could not make the relay's certificate")
            args += ["--no-ocsp", key, cert]
            self.cert = cert
        } else {
            cert = nil
        }
        process.executableURL = URL(fileURLWithPath: nghttpx)
        process.arguments = args
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        #expect(PipelineServiceTests.waitForListener(port), "nghttpx did not listen on \(port)")
    }

    /// Ends nghttpx.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
