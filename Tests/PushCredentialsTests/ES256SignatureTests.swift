import COpenSSL
import Foundation
import Testing
@testable import PushCredentials

/// A DER ECDSA signature of `message` by `key`, as OpenSSL makes one for a JVM-style signer:
/// EVP_DigestSign (OpenSSL 3's interface to ECDSA_do_sign, which is deprecated there), read back
/// into an ECDSA_SIG and written with i2d_ECDSA_SIG.
func derSignature(_ message: [UInt8], key: ES256PrivateKey) -> [UInt8] {
    let md = EVP_MD_CTX_new()
    defer { EVP_MD_CTX_free(md) }
    var signed = [UInt8](repeating: 0, count: 80)
    var length = signed.count
    let ok = EVP_DigestSignInit(md, nil, EVP_sha256(), nil, key.pkey) == 1
        && EVP_DigestSign(md, &signed, &length, message, message.count) == 1
    precondition(ok, "EVP_DigestSign failed")
    let sig = signed.withUnsafeBufferPointer { b -> OpaquePointer? in
        var p: UnsafePointer<UInt8>? = b.baseAddress
        return d2i_ECDSA_SIG(nil, &p, length)
    }
    defer { ECDSA_SIG_free(sig) }
    var out = [UInt8](repeating: 0, count: ES256Signature.maxDERLength)
    let n = out.withUnsafeMutableBufferPointer { b -> Int32 in
        var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
        return i2d_ECDSA_SIG(sig, &p)
    }
    precondition(n > 0 && Array(out[0..<Int(n)]) == Array(signed[0..<length]))
    return Array(out[0..<Int(n)])
}

/// One DER INTEGER of the big-endian `magnitude`, minimal unless `padding` extra zero bytes lead it.
func derInteger(_ magnitude: [UInt8], padding: Int = 0) -> [UInt8] {
    var b = Array(magnitude.drop { $0 == 0 })
    if b.isEmpty || b[0] & 0x80 != 0 { b.insert(0, at: 0) }
    b = [UInt8](repeating: 0, count: padding) + b
    return [0x02, UInt8(b.count)] + b
}

/// A DER SEQUENCE of `body`.
func derSequence(_ body: [UInt8]) -> [UInt8] { [0x30, UInt8(body.count)] + body }

/// The strict DER reading of ECDSA signatures, without sockets: what is accepted and what is not.
@Suite struct ES256SignatureTests {
    let key = try! ES256PrivateKey(pem: Fixture.privatePEM)
    static let n = ES256Signature.order

    func raw(_ der: [UInt8]) -> [UInt8]? { der.withUnsafeBytes { ES256Signature.raw(fromDER: $0) } }

    @Test func readsWhatOpenSSLWritesAndTheKeyVerifiesIt() throws {
        // Many signatures, so r and s of every length DER gives them (33 bytes with a high bit, 32, fewer)
        // are read.
        var lengths = Set<Int>()
        for i in 0..<64 {
            let message = Array("header.claims.\(i)".utf8)
            let der = derSignature(message, key: key)
            lengths.insert(der.count)
            let r = try #require(raw(der), "signature \(i): \(der)")
            #expect(r.count == 64)
            let ok = r.withUnsafeBytes { s in message.withUnsafeBytes { key.publicKey.verify(signature: s, message: $0) } }
            #expect(ok, "signature \(i)")
            // The same r and s written back as DER give the same bytes.
            #expect(derSequence(derInteger(Array(r[0..<32])) + derInteger(Array(r[32..<64]))) == der)
        }
        #expect(lengths.count > 1, "\(lengths)")
    }

    @Test func refusesEveryDeparture() {
        let der = derSignature(Array("m".utf8), key: key)
        let r = raw(der)!
        let rInt = derInteger(Array(r[0..<32])), sInt = derInteger(Array(r[32..<64]))
        var nMinusOne = Self.n
        nMinusOne[31] -= 1
        var overlong = [UInt8](repeating: 0, count: 33)
        overlong[0] = 1
        let cases: [(String, [UInt8])] = [
            ("a trailing byte", der + [0x00]),
            ("the sequence's length one short", [0x30, der[1] - 1] + der[2...]),
            ("the sequence's length one long", [0x30, der[1] + 1] + der[2...]),
            ("r with a needless leading zero", derSequence(derInteger(Array(r[0..<32]), padding: 1) + sInt)),
            ("s with a needless leading zero", derSequence(rInt + derInteger(Array(r[32..<64]), padding: 1))),
            ("r negative", derSequence([0x02, 0x01, 0x80] + sInt)),
            ("r zero", derSequence(derInteger([0]) + sInt)),
            ("s zero", derSequence(rInt + derInteger([0]))),
            ("r = n", derSequence(derInteger(Self.n) + sInt)),
            ("s = n", derSequence(rInt + derInteger(Self.n))),
            ("r above n", derSequence(derInteger([UInt8](repeating: 0xFF, count: 32)) + sInt)),
            ("r of 33 significant bytes", derSequence(derInteger(overlong) + sInt)),
            ("a long-form sequence length", [0x30, 0x81, der[1]] + der[2...]),
            ("an empty integer", derSequence([0x02, 0x00] + sInt)),
            ("one integer", derSequence(rInt)),
            ("three integers", derSequence(rInt + sInt + derInteger([1]))),
            ("a bit string, not an integer", derSequence([0x03] + rInt.dropFirst() + sInt)),
            ("a set, not a sequence", [0x31] + der.dropFirst()),
            ("nothing", []),
        ]
        for (what, bytes) in cases { #expect(raw(bytes) == nil, "\(what)") }
        // The limits themselves are in range.
        #expect(raw(derSequence(derInteger([1]) + derInteger(nMinusOne))) != nil)
    }

    @Test func rawSignaturesMustBeInRangeToo() throws {
        let good = try key.sign(Array("m".utf8))
        #expect(ES256Signature.inRange(good))
        #expect(!ES256Signature.inRange([UInt8](repeating: 0, count: 32) + good[32...]))
        #expect(!ES256Signature.inRange(Array(good[0..<32]) + Self.n))
        #expect(!ES256Signature.inRange(Array(good[0..<63])))
    }

    func token(signature: [UInt8]) -> String {
        let input = Base64URL.encode(Array(#"{"alg":"ES256","kid":"K"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"iss":"T","iat":1}"#.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    @Test func aTokenSignedInDERReadsAsItsRawTwinAndVerifies() throws {
        let input = Base64URL.encode(Array(#"{"alg":"ES256","kid":"K"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"iss":"T","iat":1}"#.utf8))
        let der = derSignature(Array(input.utf8), key: key)
        let parsed = try ProviderToken.parse(input + "." + Base64URL.encode(der)).get()
        #expect(parsed.signature == raw(der))
        #expect(parsed.isSigned(by: key.publicKey))
        #expect(!parsed.isSigned(by: try ES256PrivateKey.generate().publicKey))
        #expect(try ProviderToken.parse(input + "." + Base64URL.encode(key.sign(Array(input.utf8)))).get().isSigned(by: key.publicKey),
                "r ‖ s still reads")
        for bad in [der + [0], [UInt8](repeating: 0, count: 64), Array(der.dropLast())] {
            #expect(ProviderToken.parse(input + "." + Base64URL.encode(bad)) == .failure(.signatureNotES256), "\(bad)")
        }
    }

    @Test func opensslCommandSignaturesVerify() throws {
        // `openssl dgst -sign` writes DER, as Java does: an independent signer.
        let input = Base64URL.encode(Array(#"{"alg":"ES256","kid":"K"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"iss":"T","iat":1}"#.utf8))
        let dir = try TemporaryDirectory()
        try dir.write("key.p8", Fixture.privatePEM)
        try dir.write("msg", Array(input.utf8))
        _ = try runOpenSSL(["dgst", "-sha256", "-sign", dir.path("key.p8"), "-out", dir.path("sig.der"), dir.path("msg")])
        let der = Array(try Data(contentsOf: URL(fileURLWithPath: dir.path("sig.der"))))
        #expect(der.first == 0x30)
        let parsed = try ProviderToken.parse(input + "." + Base64URL.encode(der)).get()
        #expect(parsed.isSigned(by: try ES256PublicKey(pem: Fixture.publicPEM)))
    }
}
