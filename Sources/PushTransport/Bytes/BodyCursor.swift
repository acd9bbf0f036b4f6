/// Send cursor of one body: where the bytes are and how many went out. Lives in a stream slot and is
/// what nghttp2's data source points at.
struct BodyCursor {
    var base: UnsafeRawPointer?
    var count: Int
    var sent: Int
}
