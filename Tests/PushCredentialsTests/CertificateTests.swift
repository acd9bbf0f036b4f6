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
