import Testing
@testable import PushCredentials

/// A P-256 test key (made for these tests; it signs nothing real) and tokens PyJWT 2.x signed with it:
/// an independent signer, so the parser and verifier are checked against someone else's encoding.
enum Fixture {
    static let privatePEM = Array("""
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgT51dagJIqYDiLeb5
    cizpe0xwpX26sU9TyMQCZ4wKvtOhRANCAAQbdZeTMI6MFN2WnIePrVzp4yqfkFqn
    Vh2Dl2RZVMdx6FZcJjEhW5KfOmwBbk1pWhsjFcocahji7LXYKAk4meCl
    -----END PRIVATE KEY-----

    """.utf8)
    static let publicPEM = Array("""
    -----BEGIN PUBLIC KEY-----
    MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEG3WXkzCOjBTdlpyHj61c6eMqn5Ba
    p1Ydg5dkWVTHcehWXCYxIVuSnzpsAW5NaVobIxXKHGoY4uy12CgJOJngpQ==
    -----END PUBLIC KEY-----

    """.utf8)
    /// `{"alg":"ES256","kid":"KEY1234567","typ":"JWT"}` over `{"iss":"TEAM123456","iat":1700000000}`.
    static let pyjwtInteger = "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjciLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoxNzAwMDAwMDAwfQ.jCO1rJd_v7sSeZkvT_wxqrRU7uaUDNku3P8S4kTEofv0DV51KM90VN7dSreP5vHwBCzjWy0eh_gvOq5zGxHIPA"
    /// The same with `"iat":1700000000.25` (PyAPNs2 sends a float).
    static let pyjwtFloat = "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjciLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoxNzAwMDAwMDAwLjI1fQ.GoSpTyc4suqUR9DhhFuR8OSCpMGS--W_-H3sO_TKg4q5yUYp22ce6dNQpIMqRnHE0ToCoNdh-oNxPGNvxhC8kw"
    /// The same with `"iat":"1700000000"` (kalyke and APNSwift send a string).
    static let pyjwtString = "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjciLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoiMTcwMDAwMDAwMCJ9.IdrKW56n0A5kwq3vg42w1tw6QrEjEjk23cEXaWrOlM4jNMnSkhyvXO2BmSpBCobzOBqVchAjfkIB1ZV177n0TQ"
}

@Suite struct Base64URLTests {
    @Test func encodesWithoutPadding() {
        #expect(Base64URL.encode(Array("".utf8)) == "")
        #expect(Base64URL.encode(Array("f".utf8)) == "Zg")
        #expect(Base64URL.encode(Array("fo".utf8)) == "Zm8")
        #expect(Base64URL.encode(Array("foo".utf8)) == "Zm9v")
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
    }

    @Test func decodesWhatItEncodes() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
        #expect(Base64URL.decode("Zg==") == Array("f".utf8), "padding is tolerated")
        #expect(Base64URL.decode("Z") == nil, "no encoding is one digit long")
        #expect(Base64URL.decode("Zm9v+") == nil, "'+' is base64, not base64url")
    }
}

@Suite struct ES256Tests {
    @Test func signsAndVerifies() throws {
        let key = try ES256PrivateKey.generate()
        let message = Array("header.claims".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 64)
        let ok = signature.withUnsafeBytes { s in message.withUnsafeBytes { key.publicKey.verify(signature: s, message: $0) } }
        #expect(ok)
        var tampered = signature
        tampered[5] ^= 1
        let bad = tampered.withUnsafeBytes { s in message.withUnsafeBytes { key.publicKey.verify(signature: s, message: $0) } }
        #expect(!bad)
        let other = try ES256PrivateKey.generate()
        let foreign = signature.withUnsafeBytes { s in message.withUnsafeBytes { other.publicKey.verify(signature: s, message: $0) } }
        #expect(!foreign)
    }

    @Test func readsPrivateAndPublicPEM() throws {
        let key = try ES256PrivateKey(pem: Fixture.privatePEM)
        let fromPublic = try ES256PublicKey(pem: Fixture.publicPEM)
        let fromPrivate = try ES256PublicKey(pem: Fixture.privatePEM)
        #expect(fromPublic == fromPrivate)
        #expect(key.publicKey == fromPublic)
        // What we write reads back as the same key, in the PKCS #8 form of an APNs .p8.
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try ES256PrivateKey(pem: Array(pem.utf8)).publicKey == fromPublic)
        #expect(try fromPublic.pem() == String(decoding: Fixture.publicPEM, as: UTF8.self))
    }

    @Test func refusesWhatIsNotAP256Key() throws {
        #expect(throws: CredentialError("k.p8: not a PEM private key (expected -----BEGIN PRIVATE KEY-----, as in an APNs .p8 file)")) {
            try ES256PrivateKey(pem: Array("hello".utf8), source: "k.p8")
        }
        let rsa = try runOpenSSL(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
        #expect(throws: CredentialError("rsa.p8: not a P-256 (ES256) key; APNs provider keys are P-256")) {
            try ES256PrivateKey(pem: Array(rsa.utf8), source: "rsa.p8")
        }
        let p384 = try runOpenSSL(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        #expect(throws: CredentialError("p384.p8: not a P-256 (ES256) key; APNs provider keys are P-256")) {
            try ES256PrivateKey(pem: Array(p384.utf8), source: "p384.p8")
        }
        #expect(throws: CredentialError.self) { try ES256PrivateKey(contentsOfFile: "/nonexistent/AuthKey.p8") }
    }

    @Test func opensslVerifiesOurSignatures() throws {
        // The openssl command checks a DER signature; ours is r ‖ s, so rebuild the DER by hand.
        let key = try ES256PrivateKey(pem: Fixture.privatePEM)
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ0In0".utf8)
        let raw = try key.sign(message)
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var b = Array(bytes.drop { $0 == 0 })
            if b.isEmpty || b[0] & 0x80 != 0 { b.insert(0, at: 0) }
            return [0x02, UInt8(b.count)] + b
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        let der = [0x30, UInt8(body.count)] + body
        let dir = try TemporaryDirectory()
        try dir.write("sig.der", der)
        try dir.write("msg", message)
        try dir.write("pub.pem", Fixture.publicPEM)
        let out = try runOpenSSL(["dgst", "-sha256", "-verify", dir.path("pub.pem"), "-signature", dir.path("sig.der"), dir.path("msg")])
        #expect(out.contains("Verified OK"))
    }
}

@Suite struct ProviderTokenTests {
    let publicKey = try! ES256PublicKey(pem: Fixture.publicPEM)

    @Test(arguments: [Fixture.pyjwtInteger, Fixture.pyjwtFloat, Fixture.pyjwtString])
    func readsEveryIatFormPyJWTSigned(_ token: String) throws {
        let parsed = try ProviderToken.parse(token).get()
        #expect(parsed.keyID == "KEY1234567")
        #expect(parsed.teamID == "TEAM123456")
        #expect(parsed.issuedAt == 1_700_000_000)
        #expect(parsed.isSigned(by: publicKey))
    }

    @Test func signsWhatItReads() throws {
        let key = try ES256PrivateKey(pem: Fixture.privatePEM)
        let token = try ProviderToken.sign(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_712_345_678, key: key)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(Base64URL.decode(parts[0]) == Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8))
        #expect(Base64URL.decode(parts[1]) == Array(#"{"iss":"DEF123GHIJ","iat":1712345678}"#.utf8))
        let parsed = try ProviderToken.parse(token).get()
        #expect(parsed == ParsedProviderToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_712_345_678,
                                              signingInput: Array(parts[0...1].joined(separator: ".").utf8),
                                              signature: Base64URL.decode(parts[2])!))
        #expect(parsed.isSigned(by: publicKey))
    }

    @Test func lenientForms() throws {
        let key = try ES256PrivateKey(pem: Fixture.privatePEM)
        func parse(_ header: String, _ claims: String) throws -> Result<ParsedProviderToken, ProviderTokenProblem> {
            ProviderToken.parse(try ProviderToken.sign(header: Array(header.utf8), claims: Array(claims.utf8), key: key))
        }
        // Whitespace, the kid in the claims only (or in both), typ, iat as a float string.
        let spaced = try parse("{ \"alg\" : \"ES256\" ,\n \"kid\" : \"K\" }", "{\n  \"iss\": \"T\",\n  \"iat\": 17 }").get()
        #expect(spaced.keyID == "K" && spaced.teamID == "T" && spaced.issuedAt == 17)
        #expect(try parse(#"{"alg":"ES256","typ":"JWT"}"#, #"{"iss":"T","iat":5,"kid":"C"}"#).get().keyID == "C")
        #expect(try parse(#"{"alg":"ES256","kid":"H"}"#, #"{"iss":"T","iat":5,"kid":"H"}"#).get().keyID == "H")
        #expect(try parse(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":"1700000000.75"}"#).get().issuedAt == 1_700_000_000)
        #expect(try parse(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":1.7e9}"#).get().issuedAt == 1_700_000_000)
    }

    @Test func namesEveryProblem() throws {
        let key = try ES256PrivateKey(pem: Fixture.privatePEM)
        func problem(_ header: String, _ claims: String) throws -> ProviderTokenProblem? {
            let token = try ProviderToken.sign(header: Array(header.utf8), claims: Array(claims.utf8), key: key)
            if case .failure(let p) = ProviderToken.parse(token) { return p }
            return nil
        }
        #expect(try problem(#"{"kid":"K"}"#, #"{"iss":"T","iat":1}"#) == .noAlgorithm)
        #expect(try problem(#"{"alg":"HS256","kid":"K"}"#, #"{"iss":"T","iat":1}"#) == .algorithmNotES256)
        #expect(try problem(#"{"alg":"ES256"}"#, #"{"iss":"T","iat":1}"#) == .noKeyID)
        #expect(try problem(#"{"alg":"ES256","kid":""}"#, #"{"iss":"T","iat":1}"#) == .noKeyID)
        #expect(try problem(#"{"alg":"ES256","kid":"K"}"#, #"{"iat":1}"#) == .noIssuer)
        #expect(try problem(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T"}"#) == .noIssuedAt)
        #expect(try problem(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":-5}"#) == .noIssuedAt)
        #expect(try problem(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":"soon"}"#) == .noIssuedAt)
        #expect(try problem(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":true}"#) == .noIssuedAt)
        #expect(try problem(#"{"alg":"ES256","kid":"K"}"#, #"["iss"]"#) == .claimsNotJSON)
        #expect(try problem(#"{"alg":"ES256","kid":"K""#, #"{"iss":"T","iat":1}"#) == .headerNotJSON)
        let good = try ProviderToken.sign(keyID: "K", teamID: "T", issuedAt: 1, key: key)
        #expect(ProviderToken.parse(good + ".x") == .failure(.notThreeParts))
        #expect(ProviderToken.parse(String(good.dropLast(4))) == .failure(.signatureNotES256))
        #expect(ProviderToken.parse("a.b.c") == .failure(.headerNotJSON))
        #expect(ProviderToken.parse("") == .failure(.notThreeParts))
    }
}
