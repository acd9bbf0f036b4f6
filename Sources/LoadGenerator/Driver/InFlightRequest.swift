/// A request in a slot of the in-flight table, or waiting in the retry ring for its resend.
struct InFlightRequest {
    /// Global sequence number.
    var sequence: Int64
    /// Intended send time (the schedule's, kept across resends).
    var intended: UInt64
    /// Actual send time of the current attempt.
    var sent: UInt64
    /// Resends so far.
    var attempt: UInt8
    /// The phase it belongs to.
    var phase: Phase
    /// What cut off its last attempt (meaningful in the retry ring only).
    var cause: TransportErrorCause
}
