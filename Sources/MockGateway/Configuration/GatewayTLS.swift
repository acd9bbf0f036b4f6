import CommandLineOptions
import Glibc
import PushTransport

/// How the gateway serves TLS: off (h2c, the default), a certificate and key from files
/// (`--tls-cert`, `--tls-key`), or a certificate generated at start (`--tls`, `--tls-name`,
/// `--tls-cert-out`).
public struct GatewayTLS: Equatable, Sendable {
    /// `--tls`: serve TLS with a generated certificate (unless files are given).
    public var requested = false
    /// `--tls-cert`: the certificate chain (PEM, leaf first).
    public var certificateFile: String?
    /// `--tls-key`: the private key of the certificate (PEM, unencrypted).
    public var keyFile: String?
    /// `--tls-name`: names a generated certificate covers besides localhost, 127.0.0.1 and ::1.
    public var names: [String] = []
    /// `--tls-cert-out`: where the certificate a client must trust (the generating CA's) is written.
    public var certificateOut: String?

    /// Where `pushbench gateway --tls` writes the certificate to trust when `--tls-cert-out` is not given.
    public static let defaultCertificateOut = "pushbench-gateway-ca.pem"
    /// The names every generated certificate covers.
    public static let standardNames = ["localhost", "127.0.0.1", "::1"]

    /// Off: no TLS option given.
    public init() {}

    /// Whether the gateway serves TLS.
    public var isEnabled: Bool { requested || certificateFile != nil || keyFile != nil || !names.isEmpty || certificateOut != nil }
    /// Whether the certificate is generated at start (TLS without files).
    public var generates: Bool { isEnabled && certificateFile == nil && keyFile == nil }
    /// The names of a generated certificate: the standard ones, then `--tls-name`s.
    public var generatedNames: [String] {
        var all = Self.standardNames
        for n in names where !all.contains(n) { all.append(n) }
        return all
    }

    /// The combinations no single flag can check, and files that do not load (exit 2 before anything starts).
    func validate() throws(UsageError) {
        guard isEnabled else { return }
        if (certificateFile == nil) != (keyFile == nil) {
            throw UsageError(certificateFile == nil ? "--tls-key: give the certificate too (--tls-cert FILE)"
                                                    : "--tls-cert: give its private key too (--tls-key FILE)")
        }
        guard let certificateFile, let keyFile else { return }
        if !names.isEmpty { throw UsageError("--tls-name: names go into a generated certificate, not one given with --tls-cert") }
        if certificateOut != nil { throw UsageError("--tls-cert-out: writes a generated certificate, not one given with --tls-cert") }
        do throws(TLSError) { _ = try TLSServerContext(certificateFile: certificateFile, privateKeyFile: keyFile) } catch {
            throw UsageError("--tls-cert: \(error.message)")
        }
    }

    /// The options, in the gateway's table.
    static var options: [Option<GatewayConfiguration>] {
        let group = "TLS (off unless given: h2c with prior knowledge; docs/gateway.md):"
        return [
            .flag("--tls", \.tls.requested, group: group,
                  help: "serve HTTP/2 over TLS with a certificate generated at start for localhost, 127.0.0.1, ::1 and each --tls-name"),
            .value("--tls-cert", "FILE", \.tls.certificateFile,
                   help: "serve TLS with this certificate chain (PEM, leaf first) instead of a generated one") { text, name throws(UsageError) in
                try nonEmpty(text, name)
            },
            .value("--tls-key", "FILE", \.tls.keyFile, help: "the private key of --tls-cert (PEM, unencrypted)") {
                text, name throws(UsageError) in try nonEmpty(text, name)
            },
            .values("--tls-name", "NAME", \.tls.names,
                    help: "another DNS name or IP address the generated certificate covers (repeatable), e.g. api.push.apple.com") {
                text, name throws(UsageError) in
                guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") }) else {
                    throw UsageError("\(name): '\(text)' is not a DNS name or IP address")
                }
                return text
            },
            .value("--tls-cert-out", "FILE", \.tls.certificateOut,
                   help: "where to write the certificate clients must trust (--cacert); default \(defaultCertificateOut), named on the first line") {
                text, name throws(UsageError) in try nonEmpty(text, name)
            },
        ]
    }

    private static func nonEmpty(_ text: String, _ name: String) throws(UsageError) -> String {
        guard !text.isEmpty else { throw UsageError("\(name): the file name is empty") }
        return text
    }
}

/// A started gateway's TLS: the context every loop serves with and, for a generated certificate, the
/// CA certificate a client trusts (and the file it was written to, if any).
struct GatewayTLSSetup: Sendable {
    let context: TLSServerContext
    let trustedCertificatePEM: String?
    let certificateFile: String?
}

extension GatewayConfiguration {
    /// The TLS context for this configuration (nil: h2c). A generated certificate comes from a new CA,
    /// written to `--tls-cert-out` when set; client certificates are asked for under `--apns-auth cert`.
    func makeTLS() throws(GatewayStartError) -> GatewayTLSSetup? {
        guard tls.isEnabled else { return nil }
        let clientCertificates: TLSServerContext.ClientCertificates =
            auth.mode == .cert ? auth.clientCAFile.map { .request(caFile: $0) } ?? .none : .none
        do throws(TLSError) {
            if let cert = tls.certificateFile, let key = tls.keyFile {
                return GatewayTLSSetup(context: try TLSServerContext(certificateFile: cert, privateKeyFile: key,
                                                                     clientCertificates: clientCertificates),
                                       trustedCertificatePEM: nil, certificateFile: cert)
            }
            let ca = try TLSCertificateAuthority(commonName: "pushbench gateway CA")
            let names = tls.generatedNames
            let identity = try ca.issue(commonName: tls.names.first ?? "localhost", names: names)
            let context = try TLSServerContext(certificatePEM: identity.certificateChainPEM, privateKeyPEM: identity.privateKeyPEM,
                                               clientCertificates: clientCertificates)
            if let out = tls.certificateOut { try write(ca.certificatePEM, to: out) }
            return GatewayTLSSetup(context: context, trustedCertificatePEM: ca.certificatePEM, certificateFile: tls.certificateOut)
        } catch {
            throw GatewayStartError("TLS: \(error.message)")
        }
    }

    private func write(_ text: String, to path: String) throws(TLSError) {
        guard let f = fopen(path, "w") else { throw TLSError("--tls-cert-out: \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(f) }
        guard fputs(text, f) >= 0 else { throw TLSError("--tls-cert-out: \(path): cannot write") }
    }
}
