import PushCredentials
import PushVocabulary

/// What a connection's TLS client certificate means for its pushes, decided once when the connection
/// opens (`--apns-auth cert`).
public struct ClientCertificateIdentity: Equatable, Sendable {
    /// The reason every push on the connection is refused, or nil when the certificate is good:
    /// MissingProviderToken without a certificate (APNs: "no certificate and no token"), BadCertificate
    /// when it does not chain to `--client-ca` or is out of its validity period, BadCertificateEnvironment
    /// when it is issued only for the other APNs environment.
    public var problem: APNsReason?
    /// Why, in words (for the gateway's log; never certificate contents beyond the subject).
    public var detail: String
    /// The certificate's topic (its subject UID): the topic of a request without `apns-topic`.
    public var topic: String?

    /// The verdict on `certificate` (nil: the client sent none) under `configuration`; `verificationError`
    /// is why it did not chain to `--client-ca` (the TLS handshake's verdict), nil when it did.
    public static func evaluate(_ certificate: X509Certificate?, verificationError: String?,
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
        return ClientCertificateIdentity(problem: nil, detail: "ok", topic: topic)
    }
}
