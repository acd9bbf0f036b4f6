import Foundation
import MockGateway
import PushCredentials
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench credentials`'s options.
public struct CredentialsOptions: Equatable, Sendable {
    /// `--out`: the folder written.
    public var out: String?
    /// `--client-cert`: also a test CA and a client certificate signed by it.
    public var clientCertificate = false
    /// `--key-id`; a random one when nil.
    public var keyID: String?
    /// `--team-id`; a random one when nil.
    public var teamID: String?
    /// `--topic`: the client certificate's topic (subject UID).
    public var topic = "com.example.pushbench"
    /// `--force`: replace files already there.
    public var force = false
}

/// `pushbench credentials apns --out DIR`: test credentials for the mock gateway and a sender (a
/// provider key with its ids, and optionally a CA with a client certificate), and the flags that use them.
public struct CredentialsCommand: PushbenchCommand {
    public static let name = "credentials"
    public static let abstract = "write test credentials (an APNs .p8 key and ids, a client certificate) and print the flags that use them"
    public static let usage = """
    USAGE: pushbench credentials apns --out DIR [--client-cert] [options]

    Writes into DIR a new P-256 provider key as Apple issues them (AuthKey_<KEYID>.p8), its key id
    and team id (key_id, team_id), and with --client-cert a test CA (ca.pem) and a client certificate
    it signed, with the topic in its subject UID (client-cert.pem, client-key.pem, and both in
    client.pem). Prints the gateway and run flags that use them; never prints key material. For the
    mock gateway and tests only: Apple's APNs accepts none of these.
    """
    public static let footer: String? = "EXIT STATUS: 0 written; 2 bad input (nothing written); 1 a file could not be written."

    public static var options: OptionTable<CredentialsOptions> {
        OptionTable([
            .value("--out", "DIR", \.out, help: "the folder to write (made if missing)") { text, name throws(UsageError) in
                guard !text.isEmpty else { throw UsageError("\(name): names no folder") }
                return text
            },
            .flag("--client-cert", \.clientCertificate, help: "also a test CA and a client certificate it signed (--apns-auth cert)"),
            .value("--key-id", "ID", \.keyID, help: "the key id (default: 10 random capitals and digits, as Apple's)") {
                text, name throws(UsageError) in try GatewayConfiguration.credentialID(text, name, what: "a key id")
            },
            .value("--team-id", "ID", \.teamID, help: "the team id (default: 10 random capitals and digits)") {
                text, name throws(UsageError) in try GatewayConfiguration.credentialID(text, name, what: "a team id")
            },
            .value("--topic", "T", \.topic, default: "com.example.pushbench", help: "the client certificate's topic (its subject UID)") {
                text, name throws(UsageError) in
                guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw UsageError("\(name): '\(text)' is not a bundle id")
                }
                return text
            },
            .flag("--force", \.force, help: "replace files already in DIR"),
        ])
    }

    /// The validated options.
    public let options: CredentialsOptions

    public init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(1...1, "what to write: apns")
        guard a.positionals[0] == "apns" else { throw UsageError("'\(a.positionals[0])' is not a kind of credentials (apns)") }
        var o = CredentialsOptions()
        try Self.options.apply(a, to: &o)
        guard o.out != nil else { throw UsageError("--out: give the folder to write, e.g. --out creds") }
        options = o
    }

    public func run() -> Int32 {
        do {
            let written = try APNsTestCredentials.write(options)
            for line in written.report { printOut(line) }
            return 0
        } catch {
            printError("pushbench credentials: \(error.message)")
            return error.status
        }
    }
}

/// What `pushbench credentials apns` writes, and the lines it prints.
struct APNsTestCredentials {
    let keyID: String
    let teamID: String
    let keyFile: String
    let clientFiles: (ca: String, cert: String, key: String, bundle: String)?
    let topic: String

    struct Failure: Error {
        var status: Int32
        var message: String
    }

    /// Makes the key (and certificates) and writes them under `options.out`; refuses to replace a file
    /// unless `--force`.
    static func write(_ options: CredentialsOptions) throws(Failure) -> APNsTestCredentials {
        let dir = URL(fileURLWithPath: options.out!)
        let keyID = options.keyID ?? randomID()
        let teamID = options.teamID ?? randomID()
        let names = ["AuthKey_\(keyID).p8", "key_id", "team_id"]
            + (options.clientCertificate ? ["ca.pem", "client-cert.pem", "client-key.pem", "client.pem"] : [])
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        if !options.force {
            let existing = names.filter { FileManager.default.fileExists(atPath: path($0)) }
            guard existing.isEmpty else {
                throw Failure(status: 2, message: "\(dir.path) already holds \(existing.joined(separator: ", ")); give --force to replace")
            }
        }
        var files: [(String, String, Bool)] = []   // name, contents, secret
        var client: (String, String, String, String)?
        do throws(CredentialError) {
            let key = try ES256PrivateKey.generate()
            files += [(names[0], try key.pkcs8PEM(), true), ("key_id", keyID + "\n", false), ("team_id", teamID + "\n", false)]
            if options.clientCertificate {
                let ca = try TestCertificateAuthority.generate()
                let clientKey = try ES256PrivateKey.generate()
                let cert = try ca.issueClientCertificate(topic: options.topic, key: clientKey)
                let certPEM = try cert.pem(), keyPEM = try clientKey.pkcs8PEM()
                files += [("ca.pem", try ca.certificate.pem(), false), ("client-cert.pem", certPEM, false),
                          ("client-key.pem", keyPEM, true), ("client.pem", certPEM + keyPEM, true)]
                client = (path("ca.pem"), path("client-cert.pem"), path("client-key.pem"), path("client.pem"))
            }
        } catch {
            throw Failure(status: 1, message: "cannot make the credentials: \(error.message)")
        }
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        } catch {
            throw Failure(status: 1, message: "cannot make \(dir.path): \(error.localizedDescription)")
        }
        for (name, contents, secret) in files {
            // Keys are written readable by their owner only, as ssh and openssl do.
            let fd = open(path(name), O_WRONLY | O_CREAT | O_TRUNC, secret ? 0o600 : 0o644)
            guard fd >= 0 else { throw Failure(status: 1, message: "cannot write \(path(name)): \(String(cString: strerror(errno)))") }
            if secret { fchmod(fd, 0o600) }
            var text = contents
            let ok = text.withUTF8 { Glibc.write(fd, $0.baseAddress, $0.count) == $0.count }
            close(fd)
            guard ok else { throw Failure(status: 1, message: "cannot write \(path(name))") }
        }
        return APNsTestCredentials(keyID: keyID, teamID: teamID, keyFile: path(names[0]), clientFiles: client, topic: options.topic)
    }

    /// 10 random capitals and digits, the shape of Apple's key and team ids.
    static func randomID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var rng = SystemRandomNumberGenerator()
        return String((0..<10).map { _ in alphabet[Int(rng.next(upperBound: UInt32(alphabet.count)))] })
    }

    /// What was written and the flags that use it: paths and ids only.
    var report: [String] {
        var lines = [
            "pushbench credentials: provider key \(keyFile) (key id \(keyID), team id \(teamID))",
            "  gateway:       pushbench gateway --apns-key \(keyID)=\(keyFile) --apns-team \(teamID)",
            "  run:           pushbench --target http://127.0.0.1:8080 --auth-key \(keyFile) --key-id \(keyID) --team-id \(teamID)",
            "  embedded:      pushbench --auth-key \(keyFile) --key-id \(keyID) --team-id \(teamID)   (the embedded gateway checks the tokens)",
        ]
        if let c = clientFiles {
            lines += [
                "pushbench credentials: CA \(c.ca), client certificate \(c.cert) with key \(c.key) (both in \(c.bundle)), topic \(topic)",
                "  gateway:       pushbench gateway --tls --tls-cert-out gateway-ca.pem --client-ca \(c.ca)",
                "  run:           pushbench --target https://localhost:8080 --cacert gateway-ca.pem --cert \(c.cert) --key \(c.key)",
                "  curl:          curl --cacert gateway-ca.pem --cert \(c.cert) --key \(c.key) https://localhost:8080/3/device/TOKEN",
            ]
        }
        return lines
    }
}
