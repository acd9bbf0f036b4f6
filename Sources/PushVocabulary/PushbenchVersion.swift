/// pushbench's version.
public enum PushbenchVersion {
    /// Printed by `pushbench --version`, written into summary.json and the .hlog comments.
    public static let current = "0.1.0"
}
