import CommandLineOptions
import Glibc
import PushTransport

/// How the gateway serves TLS: off (h2c, the default), a certificate and key from files
/// (`--tls-cert`, `--tls-key`), or a certificate generated at start (`--tls`, `--tls-name`,
/// `--tls-cert-out`), from a new CA or from the one kept in `--tls-ca-dir`.
public struct GatewayTLS: Equatable, Sendable {
    /// `--tls`: serve TLS with a generated certificate (unless files are given).
    public var requested = false
    /// `--tls-cert`: the certificate chain (PEM, leaf first).
    public var certificateFile: String?
    /// `--tls-key`: the private key of the certificate (PEM, unencrypted).
    public var keyFile: String?
    /// `--tls-name`: names a generated certificate covers besides localhost, 127.0.0.1 and ::1.
    var names: [String] = []
    /// `--tls-cert-out`: where the certificate a client must trust (the generating CA's) is written.
    public var certificateOut: String?
    /// `--tls-ca-dir`: the directory that keeps the generating CA (``KeptCA``), reused at every start.
    public var caDirectory: String?

    /// Where `pushbench gateway --tls` writes the certificate to trust when `--tls-cert-out` is not given.
    public static let defaultCertificateOut = "pushbench-gateway-ca.pem"
    /// The names every generated certificate covers.
    static let standardNames = ["localhost", "127.0.0.1", "::1"]

    /// Off: no TLS option given.
    init() {}

    /// Whether the gateway serves TLS.
    public var isEnabled: Bool {
        requested || certificateFile != nil || keyFile != nil || !names.isEmpty || certificateOut != nil || caDirectory != nil
    }
    /// Whether the certificate is generated at start (TLS without files).
    public var generates: Bool { isEnabled && certificateFile == nil && keyFile == nil }
    /// The file of the certificate clients trust that `--tls-ca-dir` keeps, if given.
    public var keptCertificateFile: String? { caDirectory.map { KeptCA.path($0, KeptCA.certificateName) } }
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
        guard let certificateFile, let keyFile else {
            // A kept CA that cannot be used is a bad --tls-ca-dir: said before anything starts.
            if let caDirectory {
                do throws(TLSError) { _ = try KeptCA.load(caDirectory) } catch { throw UsageError("--tls-ca-dir: \(error.message)") }
            }
            return
        }
        if caDirectory != nil { throw UsageError("--tls-ca-dir: keeps the CA of a generated certificate, not one given with --tls-cert") }
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
            .value("--tls-ca-dir", "DIR", \.tls.caDirectory,
                   help: "keep the generating CA in DIR (ca.pem to trust, ca-key.pem mode 0600; made on first use) and issue from it at every start, so clients trust each restart") {
                text, name throws(UsageError) in
                guard !text.isEmpty else { throw UsageError("\(name): the directory name is empty") }
                return text
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
    /// The TLS context for this configuration (nil: h2c). A generated certificate comes from a new CA, or
    /// the one kept in `--tls-ca-dir`, whose certificate is written to `--tls-cert-out` when set; client
    /// certificates are asked for under `--apns-auth cert`.
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
            let ca: TLSCertificateAuthority
            if let directory = tls.caDirectory {
                do throws(TLSError) { ca = try KeptCA.loadOrMake(directory) } catch { throw TLSError("--tls-ca-dir: \(error.message)") }
            } else {
                ca = try TLSCertificateAuthority(commonName: "pushbench gateway CA")
            }
            let names = tls.generatedNames
            let identity = try ca.issue(commonName: tls.names.first ?? "localhost", names: names)
            let context = try TLSServerContext(certificatePEM: identity.certificateChainPEM, privateKeyPEM: identity.privateKeyPEM,
                                               clientCertificates: clientCertificates)
            if let out = tls.certificateOut { try write(ca.certificatePEM, to: out) }
            return GatewayTLSSetup(context: context, trustedCertificatePEM: ca.certificatePEM,
                                   certificateFile: tls.certificateOut ?? tls.keptCertificateFile)
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

/// The CA `--tls-ca-dir DIR` keeps: `DIR/ca.pem`, its certificate (what clients trust), and
/// `DIR/ca-key.pem`, its key (mode 0600). Made on the first start with an empty or missing DIR, read at
/// every later one, so every certificate the gateway generates chains to the same CA and a client whose
/// TLS context was made once keeps trusting it across restarts.
enum KeptCA {
    static let certificateName = "ca.pem"
    static let keyName = "ca-key.pem"
    /// A kept CA lasts ten years: it is meant to outlive many gateways.
    static let validDays = 3650

    static func path(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The CA kept in `directory`, or nil when it keeps none yet (no such directory, or neither file in
    /// it). Throws, naming the file, for a directory that is not one, one file without the other, a file
    /// that cannot be read, or a certificate and key that are not a valid CA and its key.
    static func load(_ directory: String) throws(TLSError) -> TLSCertificateAuthority? {
        var info = stat()
        if stat(directory, &info) != 0 {
            if errno == ENOENT { return nil }
            throw TLSError("\(directory): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw TLSError("\(directory): not a directory") }
        let certificate = path(directory, certificateName), key = path(directory, keyName)
        let hasCertificate = access(certificate, F_OK) == 0, hasKey = access(key, F_OK) == 0
        if !hasCertificate && !hasKey { return nil }
        if hasCertificate != hasKey {
            let (present, absent) = hasCertificate ? (certificateName, keyName) : (keyName, certificateName)
            throw TLSError("\(directory) holds \(present) but not \(absent): put it back, or empty the directory to make a new CA")
        }
        return try TLSCertificateAuthority(certificatePEM: try PEM.read(file: certificate), privateKeyPEM: try PEM.read(file: key),
                                           certificateSource: certificate, keySource: key)
    }

    /// The CA kept in `directory`; when it keeps none, a new one, written there (the directory made if
    /// missing).
    static func loadOrMake(_ directory: String) throws(TLSError) -> TLSCertificateAuthority {
        if let ca = try load(directory) { return ca }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw TLSError("\(directory): cannot make the directory: \(String(cString: strerror(errno)))")
        }
        let ca = try TLSCertificateAuthority(commonName: "pushbench gateway CA", validDays: validDays)
        // The key goes first and both are created exclusively, so a gateway starting at the same moment
        // cannot overwrite them; it stops with an error instead of serving from a CA nobody keeps.
        try write(ca.privateKeyPEM, to: path(directory, keyName), mode: 0o600)
        try write(ca.certificatePEM, to: path(directory, certificateName), mode: 0o644)
        return ca
    }

    private static func write(_ text: String, to path: String, mode: mode_t) throws(TLSError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw TLSError("\(path): cannot create: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // The umask may have narrowed the mode; the key must be exactly owner-only, the certificate readable.
        _ = fchmod(fd, mode)
        var text = text
        let written = text.withUTF8 { b -> Bool in
            var at = 0
            while at < b.count {
                let n = Glibc.write(fd, b.baseAddress! + at, b.count - at)
                if n < 0 { if errno == EINTR { continue }; return false }
                at += n
            }
            return true
        }
        guard written else { throw TLSError("\(path): cannot write: \(String(cString: strerror(errno)))") }
    }
}
