import Foundation
import PushCredentials
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench credentials`'s options.
struct CredentialsOptions: Equatable, Sendable {
    /// `--out`: the folder written.
    var out: String?
    /// `--client-cert`: also a test CA and a client certificate signed by it.
    var clientCertificate = false
    /// `--key-id`; a random one when nil.
    var keyID: String?
    /// `--team-id`; a random one when nil.
    var teamID: String?
    /// `--topic`: the client certificate's topic (subject UID).
    var topic = "com.example.pushbench"
    /// `--force`: replace files already there.
    var force = false
    /// `--token-uri URL` (fcm): the service account's `token_uri`, where senders fetch access tokens.
    var tokenURI = "http://127.0.0.1:8080/token"
    /// `--project ID` (fcm): the service account's `project_id`.
    var project = "pushbench"
}

/// The kinds of credentials `pushbench credentials` makes.
enum CredentialsKind: String, Sendable, CaseIterable {
    /// An APNs provider key with its ids (and optionally a client certificate).
    case apns
    /// A Google service account for FCM senders (firebase-admin, `pushbench --credentials`).
    case fcm

    /// The options that belong to this kind only.
    var ownOptions: [String] {
        switch self {
        case .apns: ["--client-cert", "--key-id", "--team-id", "--topic"]
        case .fcm: ["--token-uri", "--project"]
        }
    }
}

/// `pushbench credentials apns|fcm --out DIR`: test credentials for the mock gateway and a sender (apns: a
/// provider key with its ids, and optionally a CA with a client certificate; fcm: a service account), and
/// the flags that use them.
struct CredentialsCommand: PushbenchCommand {
    static let name = "credentials"
    static let abstract = "write test credentials (an APNs .p8 key and ids, a client certificate; an FCM service account) and print the flags that use them"
    static let usage = """
    USAGE: pushbench credentials apns --out DIR [--client-cert] [options]
           pushbench credentials fcm --out DIR [--token-uri URL] [--project ID]

    Writes into DIR a new P-256 provider key as Apple issues them (AuthKey_<KEYID>.p8), its key id
    and team id (key_id, team_id), and with --client-cert a test CA (ca.pem) and a client certificate
    it signed, with the topic in its subject UID (client-cert.pem, client-key.pem, and both in
    client.pem). Prints the gateway and run flags that use them; never prints key material. For the
    mock gateway and tests only: Apple's APNs accepts none of these.

    fcm: writes DIR/service-account.json, a Google service-account key file (a fresh RSA-2048 key,
    client_email, private_key_id, project_id, token_uri) that firebase-admin, google-auth and
    'pushbench --credentials' read, and prints the gateway and run flags that go with it. Test
    credentials only: the key never leaves DIR (the file is written 0600).
    """
    static let footer: String? = "EXIT STATUS: 0 written; 2 bad input (nothing written); 1 a file could not be written."

    static var options: OptionTable<CredentialsOptions> {
        OptionTable([
            .value("--out", "DIR", \.out, help: "the folder to write (made if missing)") { text, name throws(UsageError) in
                guard !text.isEmpty else { throw UsageError("\(name): names no folder") }
                return text
            },
            .flag("--client-cert", \.clientCertificate, help: "also a test CA and a client certificate it signed (--apns-auth cert)"),
            .value("--key-id", "ID", \.keyID, help: "the key id (default: 10 random capitals and digits, as Apple's)") {
                text, name throws(UsageError) in try ValueParser.credentialID(text, option: name, what: "a key id")
            },
            .value("--team-id", "ID", \.teamID, help: "the team id (default: 10 random capitals and digits)") {
                text, name throws(UsageError) in try ValueParser.credentialID(text, option: name, what: "a team id")
            },
            .value("--topic", "T", \.topic, default: "com.example.pushbench", help: "the client certificate's topic (its subject UID)") {
                text, name throws(UsageError) in
                guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw UsageError("\(name): '\(text)' is not a bundle id")
                }
                return text
            },
            .flag("--force", \.force, help: "replace files already in DIR"),
            .value("--token-uri", "URL", \.tokenURI, default: "http://127.0.0.1:8080/token",
                   help: "(fcm) the token_uri written in the service account: the gateway's token endpoint") {
                text, name throws(UsageError) in
                guard let u = URLComponents(string: text), u.scheme == "http" || u.scheme == "https", u.host?.isEmpty == false else {
                    throw UsageError("\(name): '\(text)' is not an http:// or https:// URL")
                }
                return text
            },
            .value("--project", "ID", \.project, default: "pushbench", help: "(fcm) the project_id") { text, name throws(UsageError) in
                guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                    throw UsageError("\(name): '\(text)' is not a project id (letters, digits and -)")
                }
                return text
            },
        ])
    }

    /// The kind asked for.
    let kind: CredentialsKind
    /// The validated options.
    let options: CredentialsOptions

    init(arguments a: ParsedArguments) throws(UsageError) {
        let kinds = CredentialsKind.allCases.map(\.rawValue).joined(separator: ", ")
        try a.expectPositionals(1...1, "what to write: \(kinds)")
        guard let kind = CredentialsKind(rawValue: a.positionals[0]) else {
            throw UsageError("'\(a.positionals[0])' is not a kind of credentials (\(kinds))")
        }
        for other in CredentialsKind.allCases where other != kind {
            if let name = other.ownOptions.first(where: { a.contains($0) }) {
                throw UsageError("\(name): applies to 'credentials \(other.rawValue)', not '\(kind.rawValue)'")
            }
        }
        self.kind = kind
        var o = CredentialsOptions()
        try Self.options.apply(a, to: &o)
        guard o.out != nil else { throw UsageError("--out: give the folder to write, e.g. --out creds") }
        options = o
    }

    func run() -> Int32 {
        do {
            switch kind {
            case .apns:
                let written = try APNsTestCredentials.write(options)
                for line in written.report { printOut(line) }
            case .fcm:
                for line in try FCMTestCredentials.write(options) { printOut(line) }
            }
            return 0
        } catch {
            printError("pushbench credentials: \(error.message)")
            return error.status
        }
    }
}

/// What `pushbench credentials fcm` writes (a service account), and the lines it prints.
enum FCMTestCredentials {
    static func write(_ options: CredentialsOptions) throws(APNsTestCredentials.Failure) -> [String] {
        let dir = URL(fileURLWithPath: options.out!)
        let path = dir.appendingPathComponent("service-account.json").path
        if !options.force && FileManager.default.fileExists(atPath: path) {
            throw .init(status: 2, message: "\(dir.path) already holds service-account.json; give --force to replace")
        }
        let account: ServiceAccount
        do throws(CredentialError) {
            account = try ServiceAccount.generate(projectID: options.project, tokenURI: options.tokenURI)
        } catch {
            throw .init(status: 1, message: "cannot make the service account: \(error.message)")
        }
        try APNsTestCredentials.writeFiles(dir, [("service-account.json", account.json, true)])
        let url = URLComponents(string: options.tokenURI)
        let tokenPath = url?.path.isEmpty == false ? url!.path : "/"
        let scheme = url?.scheme ?? "http"
        let host = url?.host ?? "127.0.0.1"
        let port = url?.port ?? (scheme == "https" ? 443 : 80)
        let hostPort = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        var gateway = "pushbench gateway --listen \(hostPort) --fcm-auth oauth --fcm-service-account \(path)"
        if tokenPath != "/token" { gateway += " --fcm-token-path \(tokenPath)" }
        if scheme == "https" { gateway += " --tls --tls-cert-out gateway-ca.pem" }
        return [
            "pushbench credentials: service account \(path) (client_email \(account.clientEmail), private_key_id \(account.privateKeyID))",
            "  gateway:        \(gateway)",
            "  run:            pushbench --target \(scheme)://\(hostPort) --protocol fcm --project \(account.projectID) --credentials \(path)"
                + (scheme == "https" ? " --cacert gateway-ca.pem" : ""),
            "  embedded:       pushbench --protocol fcm --credentials \(path)   (the embedded gateway is the token endpoint)",
            "  firebase-admin: credentials.Certificate('\(path)'), messaging._MessagingService.FCM_URL = '\(scheme)://\(hostPort)/v1/projects/{0}/messages:send'",
        ]
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
        try writeFiles(dir, files)
        return APNsTestCredentials(keyID: keyID, teamID: teamID, keyFile: path(names[0]), clientFiles: client, topic: options.topic)
    }

    /// Makes `dir` and writes `files` (name, contents, secret) into it.
    static func writeFiles(_ dir: URL, _ files: [(String, String, Bool)]) throws(Failure) {
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        } catch {
            throw Failure(status: 1, message: "cannot make \(dir.path): \(error.localizedDescription)")
        }
        for (name, contents, secret) in files {
            let path = dir.appendingPathComponent(name).path
            // Keys are written readable by their owner only, as ssh and openssl do.
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, secret ? 0o600 : 0o644)
            guard fd >= 0 else { throw Failure(status: 1, message: "cannot write \(path): \(String(cString: strerror(errno)))") }
            if secret { fchmod(fd, 0o600) }
            var text = contents
            let ok = text.withUTF8 { Glibc.write(fd, $0.baseAddress, $0.count) == $0.count }
            close(fd)
            guard ok else { throw Failure(status: 1, message: "cannot write \(path)") }
        }
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
                "  run:           pushbench --target https://localhost:8080 --cacert gateway-ca.pem --cert \(c.cert) --key \(c.key) --topic \(topic)",
                "  curl:          curl --cacert gateway-ca.pem --cert \(c.cert) --key \(c.key) https://localhost:8080/3/device/TOKEN",
            ]
        }
        return lines
    }
}
