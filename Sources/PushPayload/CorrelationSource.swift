/// Where a pipeline run's gateway looks for the correlation id (`--correlate`).
public enum CorrelationSource: Equatable, Sendable {
    /// The body, then every header value (`:path` included): wherever the service put it.
    case anywhere
    /// The body only.
    case body
    /// One header's value (`header:NAME`, the name in lower case).
    case header(String)
}
