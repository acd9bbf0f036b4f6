#if canImport(Glibc)
import Glibc
#endif
import PushCredentials
import PushVocabulary

/// What a connection's TLS client certificate means for its pushes, decided once when the connection
/// opens (`--apns-auth cert`).
struct ClientCertificateIdentity: Equatable, Sendable {
    /// The reason every push on the connection is refused, or nil when the certificate is good:
    /// MissingProviderToken without a certificate (APNs: "no certificate and no token"), BadCertificate
    /// when it does not chain to `--client-ca` or is out of its validity period, BadCertificateEnvironment
    /// when it is issued only for the other APNs environment.
    var problem: APNsReason?
    /// Why, in words (for the gateway's log; never certificate contents beyond the subject).
    var detail: String
    /// The certificate's topic (its subject UID): the topic of a request without `apns-topic`.
    var topic: String?
    /// The topics the certificate covers (``X509Certificate/topics``); empty when it names none, and
    /// then every topic is taken as covered.
    var topics: [String] {
        didSet { coveredTopics = Self.lengthPrefixed(topics) }
    }
    /// ``topics`` as one byte run, each topic after its length in two bytes (big-endian): what a
    /// request's `apns-topic` is compared with, without walking an array of arrays per request.
    private var coveredTopics: [UInt8]

    /// Whether a request without `apns-topic` takes the certificate's topic: when it has one and covers
    /// no other (Apple: with a certificate for several topics, `apns-topic` is required).
    var suppliesTopic: Bool { topic != nil && topics.count <= 1 }

    /// A verdict; see the properties.
    init(problem: APNsReason?, detail: String, topic: String?, topics: [String] = []) {
        self.problem = problem
        self.detail = detail
        self.topic = topic
        self.topics = topics
        coveredTopics = Self.lengthPrefixed(topics)
    }

    private static func lengthPrefixed(_ topics: [String]) -> [UInt8] {
        var out: [UInt8] = []
        for t in topics where t.utf8.count <= Int(UInt16.max) {
            out += [UInt8(t.utf8.count >> 8), UInt8(t.utf8.count & 0xFF)] + Array(t.utf8)
        }
        return out
    }

    /// The reason to refuse a request on this connection whose `apns-topic` is `topic` (nil: the
    /// certificate's own), or nil to accept it: the certificate's problem, else 400 BadTopic for a topic
    /// the certificate does not cover (as Pushy's certificate-checking mock answers; Apple documents no
    /// other reason for it). Compares bytes and allocates nothing.
    @inline(__always)
    func verdict(topic: UnsafeRawBufferPointer?) -> APNsReason? {
        if let problem { return problem }
        guard let topic, !coveredTopics.isEmpty else { return nil }
        let covered = coveredTopics.withUnsafeBytes { list -> Bool in
            var at = 0
            while at + 2 <= list.count {
                let length = Int(list[at]) << 8 | Int(list[at + 1])
                at += 2
                if length == topic.count && memcmp(list.baseAddress! + at, topic.baseAddress!, length) == 0 { return true }
                at += length
            }
            return false
        }
        return covered ? nil : .badTopic
    }

    /// The verdict on `certificate` (nil: the client sent none) under `configuration`; `verificationError`
    /// is why it did not chain to `--client-ca` (the TLS handshake's verdict), nil when it did.
    static func evaluate(_ certificate: X509Certificate?, verificationError: String?,
                                configuration: APNsAuthConfiguration) -> ClientCertificateIdentity {
        guard let certificate else {
            return ClientCertificateIdentity(problem: .missingProviderToken, detail: "no client certificate", topic: nil)
        }
        let topic = certificate.uid
        if let why = verificationError {
            return ClientCertificateIdentity(problem: .badCertificate, detail: why, topic: topic)
        }
        // A certificate without Apple's environment extensions (any client certificate from the CA) is
        // taken for either environment; one that names only the other environment is not.
        let environments = certificate.environments
        let needed: APNsCertificateEnvironments = configuration.environment == .production ? .production : .development
        if !environments.isEmpty && !environments.contains(needed) {
            return ClientCertificateIdentity(problem: .badCertificateEnvironment,
                                             detail: "issued for the other environment than \(configuration.environment.rawValue)",
                                             topic: topic)
        }
        return ClientCertificateIdentity(problem: nil, detail: "ok", topic: topic, topics: certificate.topics)
    }
}
