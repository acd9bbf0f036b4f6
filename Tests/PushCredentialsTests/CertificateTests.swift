import Testing
@testable import PushCredentials

@Suite struct CertificateTests {
    @Test func issuesAPushShapedClientCertificate() throws {
        let ca = try TestCertificateAuthority.generate()
        let key = try ES256PrivateKey.generate()
        let cert = try ca.issueClientCertificate(topic: "com.example.app", key: key)
        #expect(cert.uid == "com.example.app")
        #expect(cert.commonName == "Apple Push Services: com.example.app")
        #expect(cert.environments == .both)
        #expect(try ca.issueClientCertificate(topic: "t", key: key, environments: .development).environments == .development)
        #expect(try ca.issueClientCertificate(topic: "t", key: key, environments: []).environments == [])
        #expect(try ca.issueClientCertificate(topic: nil, key: key).uid == nil)

        // PEM round trip, and openssl (a real peer) agrees it chains to the CA and names the UID.
        let dir = try TemporaryDirectory()
        try dir.write("ca.pem", Array(try ca.certificate.pem().utf8))
        try dir.write("client.pem", Array(try cert.pem().utf8))
        #expect(try X509Certificate(contentsOfFile: dir.path("client.pem")).uid == "com.example.app")
        let verified = try runOpenSSL(["verify", "-CAfile", dir.path("ca.pem"), "-purpose", "sslclient", dir.path("client.pem")])
        #expect(verified.contains("OK"))
        let subject = try runOpenSSL(["x509", "-in", dir.path("client.pem"), "-noout", "-subject", "-nameopt", "RFC2253"])
        #expect(subject.contains("UID=com.example.app"))
        let text = try runOpenSSL(["x509", "-in", dir.path("client.pem"), "-noout", "-text"])
        #expect(text.contains("1.2.840.113635.100.6.3.1") && text.contains("1.2.840.113635.100.6.3.2"))
    }

    @Test func readsTheTopicsOfApplesTopicsExtension() throws {
        let ca = try TestCertificateAuthority.generate()
        let key = try ES256PrivateKey.generate()
        let app = "com.example.app"
        let universal = try ca.issueClientCertificate(topic: app, key: key, topics: [app, app + ".voip", app + ".complication"])
        #expect(universal.topics == [app, app + ".voip", app + ".complication"])
        #expect(try ca.issueClientCertificate(topic: app, key: key).topics == [app], "the UID alone")
        #expect(try ca.issueClientCertificate(topic: nil, key: key).topics == [])
        #expect(try ca.issueClientCertificate(topic: app, key: key, topics: ["org.other"]).topics == [app, "org.other"])

        // The layout of Apple's extension: each topic a UTF8String followed by a SEQUENCE naming its kind.
        func utf8(_ s: String) -> [UInt8] { [0x0C, UInt8(s.utf8.count)] + Array(s.utf8) }
        func sequence(_ b: [UInt8]) -> [UInt8] { [0x30, UInt8(b.count)] + b }
        let apple = sequence(utf8("a.b") + sequence(utf8("app")) + utf8("a.b.voip") + sequence(utf8("voip")))
        #expect(APNsCertificateTopics.decode(apple) == ["a.b", "a.b.voip"])
        #expect(APNsCertificateTopics.encode(["a.b", "a.b.voip"], base: "a.b") == apple)
        #expect(APNsCertificateTopics.decode(Array(apple.dropLast())) == nil)
        #expect(APNsCertificateTopics.decode([0x05, 0x00]) == nil)
        // A long list takes DER's long-form length.
        let many = (0..<20).map { "com.example.app\($0).complication" }
        #expect(APNsCertificateTopics.decode(APNsCertificateTopics.encode(many, base: nil)) == many)

        // openssl (a real peer) parses the extension and still verifies the certificate.
        let dir = try TemporaryDirectory()
        try dir.write("ca.pem", Array(try ca.certificate.pem().utf8))
        try dir.write("client.pem", Array(try universal.pem().utf8))
        #expect(try runOpenSSL(["verify", "-CAfile", dir.path("ca.pem"), "-purpose", "sslclient", dir.path("client.pem")]).contains("OK"))
        let text = try runOpenSSL(["x509", "-in", dir.path("client.pem"), "-noout", "-text"])
        #expect(text.contains("1.2.840.113635.100.6.3.6"), "\(text)")
        #expect(text.contains("com.example.app.voip"), "\(text)")
    }

    @Test func verifierAcceptsOnlyItsCAsValidCertificates() throws {
        let ca = try TestCertificateAuthority.generate()
        let other = try TestCertificateAuthority.generate(commonName: "someone else")
        let key = try ES256PrivateKey.generate()
        let dir = try TemporaryDirectory()
        try dir.write("ca.pem", Array(try ca.certificate.pem().utf8))
        let verifier = try ClientCertificateVerifier(caFile: dir.path("ca.pem"))

        #expect(verifier.problem(with: try ca.issueClientCertificate(topic: "t", key: key)) == nil)
        #expect(verifier.problem(with: try other.issueClientCertificate(topic: "t", key: key)) == "unable to get local issuer certificate")
        #expect(verifier.problem(with: try ca.issueClientCertificate(topic: "t", key: key, days: 1, notBeforeDays: 2)) == "certificate has expired")
        #expect(verifier.problem(with: try ca.issueClientCertificate(topic: "t", key: key, days: 10, notBeforeDays: -2))
                == "certificate is not yet valid")
    }

    @Test func namesBadFiles() throws {
        let dir = try TemporaryDirectory()
        try dir.write("junk.pem", Array("not a certificate".utf8))
        #expect(throws: CredentialError("\(dir.path("junk.pem")): no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)")) {
            try ClientCertificateVerifier(caFile: dir.path("junk.pem"))
        }
        #expect(throws: CredentialError("\(dir.path("junk.pem")): not a PEM certificate (expected -----BEGIN CERTIFICATE-----)")) {
            try X509Certificate(contentsOfFile: dir.path("junk.pem"))
        }
    }
}
