#if canImport(Glibc)
import Glibc
#endif

/// A file the user named (a payload template, a token file, a scenario) that could not be read, with
/// the reason in words: `no such file`, `permission denied`, `is a folder, not a file`.
public struct InputFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The path as given.
    public var path: String
    /// Why it could not be read.
    public var reason: String
    /// An error for `path`.
    init(path: String, reason: String) { self.path = path; self.reason = reason }
    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }
}

/// Reads the files a user names on the command line, so every one of them fails with the same words.
public enum InputFile {
    /// The whole content of the file at `path`.
    public static func bytes(_ path: String) throws(InputFileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw InputFileError(path: path, reason: reason(errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw InputFileError(path: path, reason: reason(errno)) }
        if (info.st_mode & S_IFMT) == S_IFDIR { throw InputFileError(path: path, reason: reason(EISDIR)) }
        var out: [UInt8] = []
        out.reserveCapacity(Int(max(0, info.st_size)))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw InputFileError(path: path, reason: reason(errno))
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// The words for `code` (an errno value).
    public static func reason(_ code: Int32) -> String {
        switch code {
        case ENOENT: "no such file"
        case EACCES, EPERM: "permission denied"
        case EISDIR: "is a folder, not a file"
        case ENOTDIR: "a part of the path is not a folder"
        case ELOOP: "too many symbolic links"
        case ENAMETOOLONG: "the path is too long"
        default: "cannot read the file (\(String(cString: strerror(code))))"
        }
    }
}
