import Foundation
import PushCredentials
import Testing
@testable import MockGateway

/// Writes `text` to a new temporary file and returns its path.
func temporaryFile(_ text: String, suffix: String = ".pem") -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-\(UUID().uuidString)\(suffix)").path
    try! Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
}

@Suite struct AuthConfigurationTests {
    let keyFile = temporaryFile(try! AuthFixture.key.pkcs8PEM(), suffix: ".p8")
    let publicKeyFile = temporaryFile(try! AuthFixture.otherKey.publicKey.pem())

    @Test func tokenFlags() throws {
        let c = try GatewayConfiguration.parse(["--apns-key", "KEY1234567=\(keyFile)", "--apns-key", "OTHER=\(publicKeyFile)",
                                                "--apns-team", "TEAM123456", "--apns-token-interval", "5m"])
        #expect(c.auth.mode == .token, "--apns-key implies token auth")
        #expect(c.auth.keys.map(\.keyID) == ["KEY1234567", "OTHER"])
        #expect(c.auth.keys[0].publicKey == AuthFixture.key.publicKey && c.auth.keys[1].publicKey == AuthFixture.otherKey.publicKey)
        #expect(c.auth.keys[0].path == keyFile)
        #expect(c.auth.teamID == "TEAM123456")
        #expect(c.auth.tokenUpdateIntervalNanos == 300_000_000_000)
        #expect(try GatewayConfiguration.parse(["--apns-auth", "token", "--apns-key", "K=\(keyFile)", "--apns-team", "T"]).auth.mode == .token)
        #expect(try GatewayConfiguration.parse([]).auth.mode == .off)
        #expect(try GatewayConfiguration.parse(["--apns-auth", "off"]).auth.mode == .off)
    }

    @Test func certFlags() throws {
        let ca = AuthFixture.CA()
        let c = try GatewayConfiguration.parse(["--client-ca", ca.file, "--apns-environment", "development"])
        #expect(c.auth.mode == .cert && c.auth.clientCAFile == ca.file)
        #expect(c.auth.environment == .development)
    }

    @Test(arguments: [
        (["--apns-auth", "token"], "--apns-auth token: give the provider keys with --apns-key KEYID=FILE.p8"),
        (["--apns-key", "K=KEYFILE"], "--apns-auth token: give the team id with --apns-team TEAMID"),
        (["--apns-auth", "off", "--apns-key", "K=KEYFILE"], "--apns-key: provider keys need --apns-auth token"),
        (["--apns-auth", "cert"], "--apns-auth cert: give the CA client certificates must chain to with --client-ca FILE"),
        (["--apns-auth", "maybe"], "--apns-auth: 'maybe' is not one of off, token, cert"),
        (["--apns-key", "k.p8"], "--apns-key: 'k.p8' is not KEYID=FILE (e.g. ABC123DEFG=AuthKey_ABC123DEFG.p8)"),
        (["--apns-key", "K="], "--apns-key: 'K=' names no file"),
        (["--apns-key", "K=/nonexistent/k.p8"], "--apns-key: /nonexistent/k.p8: cannot read (No such file or directory)"),
        (["--apns-key", "K K=KEYFILE"], "--apns-key: 'K K' is not a key id (letters, digits, '.', '-', '_'; Apple's are 10 characters like ABC123DEFG)"),
        (["--apns-team", ""], "--apns-team: '' is not a team id (letters, digits, '.', '-', '_'; Apple's are 10 characters like ABC123DEFG)"),
        (["--apns-token-interval", "soon"], "--apns-token-interval: 'soon' is not a duration"),
        (["--client-ca", "/nonexistent/ca.pem"], "--client-ca: /nonexistent/ca.pem: cannot read (No such file or directory)"),
        (["--apns-environment", "sandbox"], "--apns-environment: 'sandbox' is not one of production, development"),
    ])
    func badFlagsAreNamed(_ c: ([String], String)) {
        let flags = c.0.map { $0.replacingOccurrences(of: "KEYFILE", with: keyFile) }
        do {
            _ = try GatewayConfiguration.parse(flags)
            Issue.record("\(flags) was accepted")
        } catch {
            #expect(error.message.hasPrefix(c.1), "\(flags): \(error.message)")
        }
    }

    @Test func aFileThatIsNotAKeyIsNamed() {
        let junk = temporaryFile("hello")
        #expect(throws: GatewayConfigurationError("--apns-key: \(junk): not a PEM private key (expected -----BEGIN PRIVATE KEY-----, as in an APNs .p8 file)")) {
            try GatewayConfiguration.parse(["--apns-key", "K=\(junk)", "--apns-team", "T"])
        }
    }
}
